"""Two JWT callers on one Streamable HTTP server who cannot redeem each other's approvals
(CLI token and 2026-07-28 requestState), and a read_notes paging walk, driven through the
built binary by the official Python SDK."""

from __future__ import annotations

import json
import re
from typing import Any

import anyio
import mcp_types as types
import pytest

from harness import (
    ANSWERS,
    CALL_TIMEOUT,
    DELETE,
    MODERN,
    TEST_TIMEOUT,
    connect,
    failure,
    http_server,
    make_vault,
    mint_jwt,
    run_elicit,
    success,
    write_config,
)


def run(body: Any) -> None:
    async def bounded() -> None:
        with anyio.fail_after(TEST_TIMEOUT):
            await body()

    anyio.run(bounded)


async def call(c: Any, name: str, args: dict[str, Any], **kw: Any) -> Any:
    with anyio.fail_after(CALL_TIMEOUT + 2):
        return await c.client.session.call_tool(name, args, **kw) if kw else await c.client.call_tool(name, args)


@pytest.mark.parametrize("era", ["legacy", MODERN])
def test_jwt_callers_cannot_redeem_each_others_cli_token(era: str) -> None:
    # r[verify auth.isolation]
    # r[verify auth.jwt.caller]
    # r[verify approval.bound]
    # r[verify gate.token.bound]
    # r[verify cli.elicit.caller-default]
    async def body() -> None:
        with make_vault() as v:
            write_config(v, jwt=True)
            tok_a, tok_b = mint_jwt(v, "alice"), mint_jwt(v, "bob")
            with http_server(v) as http:
                async with connect(v, http=http, era=era, bearer=tok_a) as a, connect(v, http=http, era=era, bearer=tok_b) as b:
                    err_a = failure(await call(a, "delete_note", DELETE), "alice first call")
                    assert err_a["code"] == "elicit_required", err_a
                    assert re.search(r"--caller alice(\s|$)", err_a["recovery"]["command"]), err_a
                    minted = run_elicit(v, err_a)
                    assert minted.returncode == 0, f"elicit for alice failed: {minted.stderr}"
                    token = minted.stdout.strip()

                    err_b = failure(await call(b, "delete_note", {**DELETE, "elicit_token": token}), "bob with alice's token")
                    assert err_b["code"] == "elicit_required", err_b
                    assert err_b["details"].get("token_rejected") == "invalid", err_b
                    assert re.search(r"--caller bob(\s|$)", err_b["recovery"]["command"]), err_b
                    assert "alice" not in json.dumps(err_b), f"bob's refusal names alice: {err_b}"
                    assert v.target.exists(), "bob's call with alice's token deleted the note"

                    success(await call(a, "delete_note", {**DELETE, "elicit_token": token}), "alice with her token")
                    assert not v.target.exists(), "alice's approved delete did not run"

    run(body)


def test_jwt_callers_cannot_share_a_request_state() -> None:
    # r[verify auth.isolation]
    # r[verify approval.bound]
    # r[verify trip.modern.resubmit]
    async def body() -> None:
        with make_vault() as v:
            write_config(v, jwt=True)
            tok_a, tok_b = mint_jwt(v, "alice"), mint_jwt(v, "bob")
            with http_server(v) as http:
                approve = ANSWERS["accept"]
                async with (
                    connect(v, http=http, era=MODERN, bearer=tok_a, answer=approve) as a,
                    connect(v, http=http, era=MODERN, bearer=tok_b, answer=approve) as b,
                ):
                    raised = await call(a, "delete_note", DELETE, allow_input_required=True)
                    assert isinstance(raised, types.InputRequiredResult), f"alice's gated call: {raised!r}"
                    assert raised.input_requests and "confirm" in raised.input_requests, raised
                    assert isinstance(raised.request_state, str), raised

                    outcome: Any
                    try:
                        outcome = await call(
                            b,
                            "delete_note",
                            DELETE,
                            allow_input_required=True,
                            input_responses={"confirm": approve},
                            request_state=raised.request_state,
                        )
                    except Exception as e:  # a protocol-level refusal is also a refusal
                        outcome = e
                    refused = (
                        isinstance(outcome, Exception)
                        or (isinstance(outcome, types.CallToolResult) and outcome.is_error)
                        or (isinstance(outcome, types.InputRequiredResult) and outcome.request_state != raised.request_state)
                    )
                    assert refused, f"bob completed alice's round trip: {outcome!r}"
                    assert v.target.exists(), "bob's replay of alice's requestState deleted the note"

                    # Alice herself completes her own round trip.
                    done = await call(
                        a,
                        "delete_note",
                        DELETE,
                        allow_input_required=True,
                        input_responses={"confirm": approve},
                        request_state=raised.request_state,
                    )
                    assert isinstance(done, types.CallToolResult), f"alice's resubmission: {done!r}"
                    success(done, "alice's resubmission")
                    assert not v.target.exists(), "alice's approved round trip did not delete the note"

    run(body)


def test_read_notes_paging_walk() -> None:
    # r[verify paging.read-notes.repeat]
    # r[verify paging.read-notes.no-overflow]
    # r[verify paging.progress]
    # r[verify paging.read-notes.shape]
    async def body() -> None:
        # The smallest cap the config accepts (config.governor.minimum), and notes big enough
        # that the walk takes several pages under it.
        cap = 131_072
        with make_vault(notes=12, note_lines=250) as v:
            write_config(v, max_response_bytes=cap)
            async with connect(v, era=MODERN) as c:
                seen: list[str] = []
                cursor: str | None = None
                pages = 0
                while True:
                    args: dict[str, Any] = {"folder": "notes", **({"cursor": cursor} if cursor else {})}
                    result = await call(c, "read_notes", args)
                    page = success(result, f"read_notes page {pages + 1}")
                    pages += 1
                    assert len(json.dumps(page, separators=(",", ":"))) <= cap, f"page {pages} is over the cap"
                    assert page["errors"] == [], f"page {pages}: {page['errors']}"
                    assert page["notes"] or page["next_cursor"] is None, f"page {pages} made no progress"
                    seen += [n["path"] for n in page["notes"]]
                    if page["next_cursor"] is None:
                        break
                    cursor = page["next_cursor"]
                    assert pages < 50, "the walk does not end"
                assert pages > 1, f"expected several pages under a {cap}-byte cap, got {pages}"
                assert sorted(seen) == [f"notes/note-{i:02d}.md" for i in range(1, 13)]

    run(body)


def test_read_notes_cursor_is_bound_to_caller_and_request() -> None:
    # r[verify paging.cursor.bound]
    # r[verify paging.cursor.refusals]
    # r[verify results.invalid-input]
    # r[verify auth.isolation]
    async def body() -> None:
        with make_vault(notes=8, note_lines=250) as v:
            write_config(v, jwt=True, max_response_bytes=131_072)
            tok_a, tok_b = mint_jwt(v, "alice"), mint_jwt(v, "bob")
            with http_server(v) as http:
                async with connect(v, http=http, era="legacy", bearer=tok_a) as a, connect(v, http=http, era="legacy", bearer=tok_b) as b:
                    first = success(await call(a, "read_notes", {"folder": "notes"}), "alice's first page")
                    cursor = first["next_cursor"]
                    assert isinstance(cursor, str), first
                    err = failure(await call(b, "read_notes", {"folder": "notes", "cursor": cursor}), "bob with alice's cursor")
                    assert err["code"] == "invalid_input" and err["details"]["reason"] == "foreign", err
                    err = failure(await call(a, "read_notes", {"folder": "inbox", "cursor": cursor}), "another request")
                    assert err["code"] == "invalid_input" and err["details"]["reason"] == "request_mismatch", err
                    success(await call(a, "read_notes", {"folder": "notes", "cursor": cursor}), "alice's second page")

    run(body)
