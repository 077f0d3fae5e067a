"""The confirmation routes of spec/trips.md and spec/gate.md driven through the built binary by the official
Python SDK (`mcp` 2.3): `delete_note` (always gated) on a temp vault, over stdio and
Streamable HTTP, legacy era and 2026-07-28, with every client answer and with no capability."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
import pytest

from harness import (
    call_bounded,
    run_bounded,
    ANSWERS,
    CALL_TIMEOUT,
    DELETE,
    MODERN,
    ORIGINAL,
    TEST_TIMEOUT,
    Connected,
    Vault,
    connect,
    failure,
    http_server,
    make_vault,
    run_elicit,
    success,
)

ROUND_TRIPS = [
    pytest.param("stdio", MODERN, False, id="stdio-2026-07-28"),
    pytest.param("http", MODERN, False, id="http-2026-07-28"),
    pytest.param("stdio", "legacy", True, id="stdio-legacy-shim"),
]
PLAIN = [
    pytest.param("stdio", "legacy", False, id="stdio-legacy-no-shim"),
    pytest.param("http", "legacy", False, id="http-legacy"),
    pytest.param("http", "legacy", True, id="http-legacy-server-shim-flag"),
]


@contextlib.asynccontextmanager
async def opened(transport: str, era: str, shim: bool, answer: Any) -> AsyncIterator[tuple[Vault, Connected]]:
    with make_vault() as v:
        if transport == "http":
            with http_server(v, ["--legacy-elicitation-shim"] if shim else []) as http:
                async with connect(v, http=http, era=era, answer=answer) as c:
                    yield v, c
        else:
            async with connect(v, era=era, answer=answer, shim=shim) as c:
                yield v, c


run = run_bounded
call = call_bounded


def assert_prompt_shape(prompt: Any, where: str) -> None:
    # r[verify trip.modern.shape]
    schema = prompt.requested_schema
    assert schema.get("type") == "object", f"{where}: {schema}"
    assert schema["properties"]["approve"]["type"] == "boolean", f"{where}: {schema}"
    assert "approve" in schema.get("required", []), f"{where}: {schema}"


def assert_elicit_required(err: dict[str, Any], caller: str, where: str) -> None:
    # r[verify results.elicit-required]
    # r[verify results.elicit-required.directive]
    assert err["code"] == "elicit_required", f"{where}: {err}"
    assert err["retryable"] is False, f"{where}: {err}"
    d = err.get("details") or {}
    assert d.get("tool") == "delete_note" and d.get("args_hash") and d.get("state_fp"), f"{where}: {err}"
    assert re.search(rf"--caller {re.escape(caller)}(\s|$)", err["recovery"]["command"]), f"{where}: {err}"
    assert re.match(r"^\W*(STOP|ask)", err["message"], re.I), f"{where}: no directive first: {err['message']}"


@pytest.mark.parametrize("transport,era,shim", ROUND_TRIPS)
def test_accept_deletes_after_one_prompt(transport: str, era: str, shim: bool) -> None:
    # The built binary is served over stdio and over --http ADDR; over stdio any byte of log on
    # stdout would corrupt the JSON-RPC stream the official client reads, so this also checks
    # that logs go to stderr only.
    # r[verify cli.serve.transports]
    # r[verify cli.serve.stderr]
    # r[verify trip.capability]
    # r[verify trip.accept-only]
    # r[verify trip.never-twice]
    # r[verify trip.modern.transports]
    # r[verify trip.modern.resubmit]
    # r[verify trip.legacy-shim]
    # r[verify gate.sensitive.confirm]
    async def body() -> None:
        async with opened(transport, era, shim, ANSWERS["accept"]) as (v, c):
            success(await call(c, "delete_note", DELETE), f"{transport} {era} accept")
            assert len(c.prompts) == 1, f"prompted {len(c.prompts)} times"
            assert_prompt_shape(c.prompts[0], f"{transport} {era}")
            assert not v.target.exists(), "the approved delete did not run"

    run(body)


@pytest.mark.parametrize("answer", ["accept+approve:false", "decline"])
@pytest.mark.parametrize("transport,era,shim", ROUND_TRIPS)
def test_decline_is_a_hard_stop(transport: str, era: str, shim: bool, answer: str) -> None:
    # r[verify trip.decline]
    # r[verify trip.decline.text]
    # r[verify trip.decline.no-redispatch]
    # r[verify results.approval-declined]
    async def body() -> None:
        async with opened(transport, era, shim, ANSWERS[answer]) as (v, c):
            where = f"{transport} {era} {answer}"
            err = failure(await call(c, "delete_note", DELETE), where)
            assert err["code"] == "approval_declined", f"{where}: {err}"
            assert err["details"]["reason"] == "approval_declined", f"{where}: {err}"
            assert err["retryable"] is False, f"{where}: {err}"
            assert re.search("declined", err["message"], re.I), f"{where}: {err['message']}"
            assert len(c.prompts) == 1, f"{where}: prompted {len(c.prompts)} times"
            assert v.target.exists(), f"{where}: the note was deleted after a decline"

    run(body)


@pytest.mark.parametrize("transport,era,shim", ROUND_TRIPS)
def test_cancel_points_at_the_cli_route(transport: str, era: str, shim: bool) -> None:
    # r[verify trip.cancel]
    # r[verify trip.cancel.text]
    # r[verify results.approval-not-obtained]
    async def body() -> None:
        async with opened(transport, era, shim, ANSWERS["cancel"]) as (v, c):
            where = f"{transport} {era} cancel"
            err = failure(await call(c, "delete_note", DELETE), where)
            assert err["code"] == "approval_not_obtained", f"{where}: {err}"
            assert err["details"]["reason"] == "approval_not_obtained", f"{where}: {err}"
            assert v.target.exists(), f"{where}: the note was deleted after a cancel"
            minted = run_elicit(v, err)
            assert minted.returncode == 0, f"{where}: the recovery's elicit command failed: {minted.stderr}"
            done = await call(c, "delete_note", {**DELETE, "elicit_token": minted.stdout.strip()})
            success(done, f"{where} then elicit_token")
            assert not v.target.exists(), f"{where}: the token did not let the delete run"
            assert len(c.prompts) == 1, f"{where}: a call carrying a token was prompted again"

    run(body)


@pytest.mark.parametrize("transport,era,shim", ROUND_TRIPS + PLAIN)
def test_no_capability_gets_elicit_required(transport: str, era: str, shim: bool) -> None:
    # r[verify trip.no-capability]
    async def body() -> None:
        async with opened(transport, era, shim, None) as (v, c):
            where = f"{transport} {era} shim={shim} no capability"
            err = failure(await call(c, "delete_note", DELETE), where)
            assert_elicit_required(err, "stdio" if transport == "stdio" else "http-local", where)
            assert v.target.exists(), f"{where}: the note was deleted"

    run(body)


@pytest.mark.parametrize("transport,era,shim", PLAIN)
def test_plain_elicit_required_despite_capability(transport: str, era: str, shim: bool) -> None:
    # r[verify trip.legacy-plain]
    # r[verify trip.legacy-shim.opt-in]
    # r[verify trip.legacy-shim.stdio-only]
    async def body() -> None:
        async with opened(transport, era, shim, ANSWERS["accept"]) as (v, c):
            where = f"{transport} {era} shim={shim} with capability"
            err = failure(await call(c, "delete_note", DELETE), where)
            assert_elicit_required(err, "stdio" if transport == "stdio" else "http-local", where)
            assert c.prompts == [], f"{where}: the client was prompted"
            assert v.target.exists(), f"{where}: the note was deleted"

    run(body)


CLI_ROUTES = [
    pytest.param("stdio", "legacy", id="stdio-legacy"),
    pytest.param("stdio", MODERN, id="stdio-2026-07-28"),
    pytest.param("http", "legacy", id="http-legacy"),
    pytest.param("http", MODERN, id="http-2026-07-28"),
]


@pytest.mark.parametrize("transport,era", CLI_ROUTES)
def test_cli_token_route_is_single_use(transport: str, era: str) -> None:
    # r[verify gate.routes]
    # r[verify gate.token.single-use]
    # r[verify gate.token.refused]
    # r[verify cli.elicit.prints-token]
    # r[verify cli.elicit.hash]
    # r[verify auth.stdio-caller]
    # r[verify auth.none.caller]
    async def body() -> None:
        async with opened(transport, era, False, None) as (v, c):
            where = f"CLI route {transport} {era}"
            err = failure(await call(c, "delete_note", DELETE), where)
            assert_elicit_required(err, "stdio" if transport == "stdio" else "http-local", where)
            minted = run_elicit(v, err)
            assert minted.returncode == 0, f"{where}: obsidian-tc elicit failed: {minted.stderr}"
            assert re.fullmatch(r"\S+\n", minted.stdout), f"{where}: elicit printed {minted.stdout!r}"
            token = minted.stdout.strip()
            success(await call(c, "delete_note", {**DELETE, "elicit_token": token}), f"{where} with token")
            assert not v.target.exists(), f"{where}: the note is still there"
            # The same arguments gated again: the spent token must approve nothing.
            v.target.write_text(ORIGINAL)
            again = failure(await call(c, "delete_note", {**DELETE, "elicit_token": token}), f"{where} replay")
            assert again["code"] == "elicit_required", f"{where} replay: {again}"
            assert again["details"].get("token_rejected") == "spent", f"{where} replay: {again}"
            assert v.target.exists(), f"{where}: a spent token deleted the note again"

    run(body)


def test_legacy_shim_prompt_answered_with_an_error_is_cancel() -> None:
    # r[verify trip.legacy-shim.no-answer]
    async def body() -> None:
        refusal = types.ErrorData(code=types.INVALID_REQUEST, message="this client cannot show the form")
        async with opened("stdio", "legacy", True, refusal) as (v, c):
            err = failure(await call(c, "delete_note", DELETE), "shim prompt answered with an error")
            assert err["code"] == "approval_not_obtained", err
            assert len(c.prompts) == 1, f"prompted {len(c.prompts)} times"
            assert v.target.exists(), "the note was deleted"

    run(body)
