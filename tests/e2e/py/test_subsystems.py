"""The subsystems behind the binding table of spec/drift.md, driven through the built binary by the
official Python SDK (`mcp` 2.3) over stdio: agent memory with `delete_entity` approved by the
printed `obsidian-tc elicit` command, `git_commit` approved in the 2026-07-28 round trip on a
repository made by the test and checked with git itself, and `search_notes` finding an edit
made on disk behind the server's back."""

from __future__ import annotations

import subprocess
from typing import Any

import anyio

from harness import (
    call_bounded,
    run_bounded,
    ANSWERS,
    CALL_TIMEOUT,
    MODERN,
    TEST_TIMEOUT,
    Connected,
    connect,
    failure,
    make_vault,
    run_elicit,
    success,
)


run = run_bounded
call = call_bounded


def test_delete_entity_is_approved_by_the_printed_command_and_refuses_a_stale_one() -> None:
    # r[verify drift.bind.delete-entity]
    # r[verify cli.elicit.one-mint-per-raise]
    async def body() -> None:
        with make_vault() as v:
            async with connect(v, era=MODERN, answer=None) as c:
                ada = success(
                    await call(c, "upsert_entity", {"type": "person", "name": "Ada", "observations": ["wrote notes"]}),
                    "upsert Ada",
                )
                engine = success(
                    await call(c, "upsert_entity", {"type": "machine", "name": "Engine", "observations": ["analytical"]}),
                    "upsert Engine",
                )
                ada_id, engine_id = ada["entity"]["id"], engine["entity"]["id"]
                success(
                    await call(c, "relate_entities", {"source": ada_id, "target": engine_id, "relation": "designed_for"}),
                    "relate",
                )
                note = v.vault / "memory" / "person" / "Ada.md"
                assert note.is_file(), "the entity's note is materialized in the vault"
                args = {"entity_id": ada_id, "cascade": True}
                err = failure(await call(c, "delete_entity", args), "delete without approval")
                assert err["code"] == "elicit_required", err

                # A hand edit between the request and the redemption: the approval is stale.
                minted = run_elicit(v, err)
                assert minted.returncode == 0, minted.stderr
                note.write_text(note.read_text() + "\nA line a person added.\n")
                stale = failure(
                    await call(c, "delete_entity", {**args, "elicit_token": minted.stdout.strip()}),
                    "stale delete",
                )
                assert stale["code"] == "replay_drift", stale
                assert note.is_file(), "nothing applied"

                # The same printed command cannot mint twice from one blocked call.
                again = run_elicit(v, err)
                assert again.returncode == 1 and "run the blocked call again" in again.stderr, again.stderr

                err = failure(await call(c, "delete_entity", args), "delete again")
                minted = run_elicit(v, err)
                assert minted.returncode == 0, minted.stderr
                success(
                    await call(c, "delete_entity", {**args, "elicit_token": minted.stdout.strip()}),
                    "approved delete",
                )
                assert not note.exists(), "the note went to the delete snapshot store"
                gone = failure(await call(c, "get_entity", {"entity_id": ada_id}), "get deleted")
                assert gone["code"] == "entity_not_found", gone

    run(body)


def git(cwd: Any, *args: str) -> str:
    out = subprocess.run(
        ["git", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
        env={"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "PATH": "/usr/bin:/bin:/usr/local/bin"},
    )
    return out.stdout


def test_git_commit_commits_exactly_what_was_approved_in_the_round_trip() -> None:
    # r[verify drift.bind.git-commit]
    async def body() -> None:
        with make_vault() as v:
            git(v.vault, "init", "-q", "-b", "main")
            git(v.vault, "config", "user.name", "E2E Tester")
            git(v.vault, "config", "user.email", "e2e@example.invalid")
            git(v.vault, "add", "-A")
            git(v.vault, "commit", "-q", "-m", "initial")
            (v.vault / "notes" / "note-01.md").write_text("# Note 1\n\nchanged by the agent\n")
            async with connect(v, era=MODERN, answer=ANSWERS["accept"]) as c:
                status = success(await call(c, "git_status", {}), "status")
                assert status["branch"] == "main", status
                success(await call(c, "git_stage", {"paths": ["notes/note-01.md"]}), "stage")
                success(await call(c, "git_commit", {"message": "Edit note 1"}), "commit")
                assert len(c.prompts) == 1, "one confirmation for the commit"
                assert "notes/note-01.md" in c.prompts[0].message, c.prompts[0].message
            log = git(v.vault, "log", "--format=%s|%an", "-n", "2")
            assert log.splitlines() == ["Edit note 1|E2E Tester", "initial|E2E Tester"], log
            shown = git(v.vault, "show", "--name-only", "--format=", "HEAD")
            assert shown.split() == ["notes/note-01.md"], shown

    run(body)


def test_search_notes_finds_an_edit_made_on_disk() -> None:
    async def body() -> None:
        with make_vault() as v:
            (v.vault / "notes" / "lantern.md").write_text("# Lantern\n\nA quartz harbor lantern at dusk.\n")
            async with connect(v, era=MODERN, answer=None) as c:
                found = success(await call(c, "search_notes", {"query": "quartz lantern"}), "search")
                paths = [hit["path"] for hit in found["results"]]
                assert paths and paths[0] == "notes/lantern.md", found
                # An edit made outside the server (as Obsidian would) is seen on the next call.
                (v.vault / "notes" / "note-02.md").write_text("# Note 2\n\nthe word zephyrine appears\n")
                with anyio.fail_after(10):
                    while True:
                        found = success(await call(c, "search_notes", {"query": "zephyrine"}), "search edit")
                        if [h["path"] for h in found["results"]] == ["notes/note-02.md"]:
                            break
                        await anyio.sleep(0.1)

    run(body)
