"""The tool framework as the official Python SDK (`mcp` 2.3) sees it through the built binary:
every tool's `outputSchema` (checked here with `jsonschema`, which `mcp` depends on, on top of
the SDK's own check on call_tool), `notifications/progress` for a call that asks for them (and
none for a call that does not), and the summary of the call in the confirmation form."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import jsonschema
import mcp_types as types
import pytest

from harness import (
    ANSWERS,
    CALL_TIMEOUT,
    MODERN,
    TEST_TIMEOUT,
    Connected,
    Vault,
    connect,
    failure,
    http_server,
    make_vault,
    success,
)

ROUND_TRIPS = [
    pytest.param("stdio", MODERN, False, id="stdio-2026-07-28"),
    pytest.param("http", MODERN, False, id="http-2026-07-28"),
    pytest.param("stdio", "legacy", True, id="stdio-legacy-shim"),
]

# One successful call of each of the twelve note tools and of the subsystem tools that need no
# engine or repository set up, in an order that makes each one valid.
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("list_notes", {}),
    ("read_notes", {"folder": "notes"}),
    ("write_note", {"path": "drafts/w.md", "content": "hello\n", "mode": "create"}),
    ("copy_note", {"from": "drafts/w.md", "to": "drafts/w-copy.md"}),
    ("move_note", {"from": "drafts/w-copy.md", "to": "drafts/w-moved.md"}),
    ("update_frontmatter", {"path": "notes/note-02.md", "operation": "merge", "data": {"tag": "e2e"}}),
    ("update_task", {"path": "tasks.md", "line": 1, "status": "done"}),
    ("rewrite_link", {"from_target": "notes/note-01", "to_target": "notes/note-03"}),
    ("prune_hub_links", {"path": "hub.md"}),
    ("commit_wiki_page", {"path": "wiki/page.md", "content": "# Page\n\nGenerated.\n"}),
    ("delete_note", {"path": "inbox/delete-me.md"}),
    ("restore_note", {"path": "inbox/delete-me.md"}),
    ("search_notes", {"query": "note"}),
    ("capture_note", {"content": "a thought to keep\n", "tags": ["e2e"]}),
    ("list_captures", {}),
    ("upsert_entity", {"type": "person", "name": "Ada", "observations": ["wrote notes"]}),
    ("search_entities", {"query": "Ada"}),
    ("reset_vault_cache", {}),
]


def put(v: Vault, rel: str, text: str) -> None:
    path = v.vault / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@contextlib.asynccontextmanager
async def opened(transport: str, era: str, shim: bool, answer: Any, prepare: Any = None) -> AsyncIterator[tuple[Vault, Connected]]:
    with make_vault() as v:
        if prepare is not None:
            prepare(v)
        if transport == "http":
            with http_server(v) as http:
                async with connect(v, http=http, era=era, answer=answer) as c:
                    yield v, c
        else:
            async with connect(v, era=era, answer=answer, shim=shim) as c:
                yield v, c


def run(body: Any) -> None:
    async def bounded() -> None:
        with anyio.fail_after(TEST_TIMEOUT):
            await body()

    anyio.run(bounded)


async def call(c: Connected, name: str, args: dict[str, Any], progress_callback: Any = None) -> Any:
    with anyio.fail_after(CALL_TIMEOUT + 2):
        return await c.client.call_tool(name, args, progress_callback=progress_callback)


def progress_notifications(c: Connected, start: int = 0) -> list[types.ProgressNotification]:
    return [n for n in c.notifications[start:] if isinstance(n, types.ProgressNotification)]


def schema_vault(v: Vault) -> None:
    put(v, "tasks.md", "- [ ] water the plants\n")
    put(v, "hub.md", "# Hub\n\n- [[notes/note-01]]\n- [[gone-for-good]]\n")


@pytest.mark.parametrize("transport,era,shim", ROUND_TRIPS)
def test_every_tool_has_an_object_output_schema_its_results_satisfy(transport: str, era: str, shim: bool) -> None:
    # r[verify tools.output-schema]
    async def body() -> None:
        async with opened(transport, era, shim, ANSWERS["accept"], schema_vault) as (_v, c):
            where = f"{transport} {era}"
            with anyio.fail_after(CALL_TIMEOUT):
                listed = await c.client.list_tools()
            schemas = {t.name: t.output_schema for t in listed.tools}
            missing = sorted({name for name, _ in CALLS} - set(schemas))
            assert not missing, f"{where}: {missing} not in tools/list {sorted(schemas)}"
            validators = {}
            for name, schema in schemas.items():
                assert isinstance(schema, dict) and schema.get("type") == "object", f"{where}: {name} outputSchema {schema!r}"
                assert isinstance(schema.get("properties"), dict), f"{where}: {name} outputSchema without properties"
                cls = jsonschema.validators.validator_for(schema)
                cls.check_schema(schema)
                validators[name] = cls(schema)
            for name, args in CALLS:
                # The SDK itself validates a successful result against the listed outputSchema
                # and raises RuntimeError when it does not match.
                try:
                    result = await call(c, name, args)
                except RuntimeError as e:
                    pytest.fail(f"{where}: the client refused {name}({args}): {e}")
                sc = success(result, f"{where} {name}")
                errors = sorted(validators[name].iter_errors(sc), key=lambda e: list(e.path))
                assert not errors, f"{where}: {name} structuredContent {sc} fails its outputSchema: {[e.message for e in errors]}"

    run(body)


def link_vault(v: Vault) -> None:
    """Three notes that link to [[old]] (one of them twice), beside the three plain ones."""
    put(v, "notes/l1.md", "See [[old]] and [[old|the old one]].\n")
    put(v, "notes/l2.md", "Also [[old]].\n")
    put(v, "notes/l3.md", "And ![[old]] embedded.\n")


@pytest.mark.parametrize("transport,era,shim", ROUND_TRIPS)
def test_progress_of_a_confirmed_rewrite_link(transport: str, era: str, shim: bool) -> None:
    # r[verify tools.progress]
    # r[verify tools.rewrite-link]
    async def body() -> None:
        async with opened(transport, era, shim, ANSWERS["accept"], link_vault) as (v, c):
            where = f"{transport} {era}"
            reports: list[tuple[float, float | None, str | None]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                reports.append((progress, total, message))

            args = {"from_target": "old", "to_target": "new", "dry_run": False}
            done = success(await call(c, "rewrite_link", args, on_progress), f"{where} with a progress callback")
            assert done["applied"] is True and len(done["notes"]) == 3, f"{where}: {done}"
            assert (v.vault / "notes" / "l2.md").read_text() == "Also [[new]].\n", f"{where}: the rewrite did not happen"
            # The SDK runs each progress callback in a task of its own: let them finish.
            with anyio.move_on_after(2):
                while not reports or reports[-1][0] < len(done["notes"]):
                    await anyio.sleep(0.02)
            total = len(done["notes"])
            assert len(reports) >= 2, f"{where}: expected a report before the writes and after each, got {reports}"
            assert all(t == total for _, t, _ in reports), f"{where}: total is not the number of notes: {reports}"
            progress = [p for p, _, _ in reports]
            assert progress == sorted(set(progress)), f"{where}: progress does not increase: {reports}"
            assert progress[-1] == total, f"{where}: the last report is not at total: {reports}"
            # The same reports reached the message_handler, all under one token.
            seen = progress_notifications(c)
            assert [n.params.progress for n in seen] == progress, f"{where}: {seen} vs {reports}"
            assert len({n.params.progress_token for n in seen}) == 1, f"{where}: {seen}"

            # The same kind of call without a callback: the SDK sends no progressToken and the
            # message_handler must see no notifications/progress at all.
            put(v, "notes/l4.md", "Now [[new]].\n")
            mark = len(c.notifications)
            again = success(
                await call(c, "rewrite_link", {"from_target": "new", "to_target": "newer", "dry_run": False}),
                f"{where} without a progress callback",
            )
            assert again["applied"] is True, f"{where}: {again}"
            await anyio.sleep(0.2)
            assert progress_notifications(c, mark) == [], f"{where}: progress sent without a token"

    run(body)


@pytest.mark.parametrize("transport,era,shim", ROUND_TRIPS)
def test_write_note_form_shows_target_sizes_and_diff(transport: str, era: str, shim: bool) -> None:
    # r[verify tools.summary]
    # r[verify tools.summary.write]
    # r[verify tools.write-note.confirm]
    caller = "stdio" if transport == "stdio" else "http-local"

    async def body() -> None:
        asked: list[int] = []

        def answer(_params: Any) -> types.ElicitResult:
            # The first prompt is cancelled (its refusal hands us the args_hash), the second approved.
            asked.append(1)
            return ANSWERS["cancel"] if len(asked) == 1 else ANSWERS["accept"]

        async with opened(transport, era, shim, answer, lambda v: put(v, "a.md", "line one\nold line\n")) as (v, c):
            where = f"{transport} {era}"
            args = {"path": "a.md", "content": "line one\nnew line\n"}
            refused = failure(await call(c, "write_note", args), f"{where} cancelled")
            assert refused["code"] == "approval_not_obtained", f"{where}: {refused}"
            success(await call(c, "write_note", args), f"{where} approved")
            assert (v.vault / "a.md").read_text() == args["content"], f"{where}: the approved write did not land"
            assert len(c.prompts) == 2, f"{where}: prompted {len(c.prompts)} times"
            for prompt in c.prompts:
                message = prompt.message
                lines = message.split("\n")

                def has(pattern: str, what: str) -> None:
                    assert any(re.fullmatch(pattern, line) for line in lines), f"{where}: no {what} line in:\n{message}"  # noqa: B023

                has(rf"write_note in vault \S+ for caller {caller}", "tool/vault/caller")
                has(rf"args_hash {re.escape(refused['details']['args_hash'])}", "args_hash")
                assert "  target: a.md" in lines, f"{where}: no '  target: a.md' line in:\n{message}"
                has(r"\s*size: 18 bytes -> 18 bytes", "size")
                has(r"\s*-old line", "-old line")
                has(r"\s*\+new line", "+new line")
                has(r"\s* line one", "unchanged context")
            assert c.prompts[0].message == c.prompts[1].message, f"{where}: the same call was summarised differently"

    run(body)
