"""The lean facade driven through the built binary by the official Python SDK (`mcp` 2.3)
over stdio: `tools/list` shows the three facade tools only, `find_capability` finds the tool
for a task, and `call_capability` is a confirmation route like the others: approved by the
printed `obsidian-tc elicit` command with the token next to name and args, and by the
2026-07-28 round trip that the client completes itself."""

from __future__ import annotations

import json
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
    Vault,
    connect,
    failure,
    make_vault,
    run_elicit,
    success,
)

run = run_bounded
def lean_config(v: Vault) -> None:
    v.config = v.dir / "obsidian-tc.toml"
    v.config.write_text(
        "\n".join(
            [
                f"cacheDir = {json.dumps(str(v.cache))}",
                "",
                "[toolFacade]",
                'mode = "lean"',
                "",
                "[[vaults]]",
                'id = "e2e"',
                f"root = {json.dumps(str(v.vault))}",
                "",
            ]
        )
    )
call = call_bounded


def test_lean_mode_lists_three_tools_and_a_printed_token_approves_through_call_capability() -> None:
    # r[verify facade.mode.lean]
    # r[verify facade.call.token-beside]
    # r[verify facade.call.resend]
    async def body() -> None:
        with make_vault() as v:
            lean_config(v)
            async with connect(v, answer=None) as c:
                listed = await c.client.list_tools()
                names = [t.name for t in listed.tools]
                assert names == ["find_capability", "describe_capability", "call_capability"], names

                found = success(await call(c, "find_capability", {"query": "delete a note"}), "find")
                assert found["capabilities"][0]["name"] == "delete_note", found
                described = success(await call(c, "describe_capability", {"name": "delete_note"}), "describe")
                assert "path" in described["inputSchema"]["properties"], described

                args = {"path": "inbox/delete-me.md"}
                err = failure(await call(c, "call_capability", {"name": "delete_note", "args": args}), "unapproved")
                assert err["code"] == "elicit_required", err
                assert err["details"]["via"] == "call_capability", err
                assert "call_capability" in err["message"], err["message"]
                assert v.target.is_file(), "nothing applied before approval"

                minted = run_elicit(v, err)
                assert minted.returncode == 0, minted.stderr
                token = minted.stdout.strip()
                done = success(
                    await call(c, "call_capability", {"name": "delete_note", "args": args, "elicit_token": token}),
                    "approved through the facade",
                )
                assert done["path"] == "inbox/delete-me.md", done
                assert not v.target.exists(), "the note is gone"

    run(body)


def test_the_modern_round_trip_completes_through_call_capability() -> None:
    # r[verify facade.call.round-trips]
    async def body() -> None:
        with make_vault() as v:
            lean_config(v)
            async with connect(v, era=MODERN, answer=ANSWERS["accept"]) as c:
                moved = success(
                    await call(
                        c,
                        "call_capability",
                        {"name": "move_note", "args": {"from": "inbox/delete-me.md", "to": "archive/kept.md"}},
                    ),
                    "move through the facade",
                )
                assert moved["to"] == "archive/kept.md", moved
                assert len(c.prompts) == 1, "the human saw one prompt"
                assert "inbox/delete-me.md" in c.prompts[0].message, c.prompts[0].message
                assert (v.vault / "archive" / "kept.md").is_file()

    run(body)
