"""Shared fixtures for the Python end-to-end suite.

A temporary vault, the built ``obsidian-tc`` binary (path in OBSIDIAN_TC_BIN) served over
stdio or Streamable HTTP, and the official ``mcp`` SDK's ``Client`` connected to it in either
protocol era. Every await is bounded (``anyio.fail_after``) and every server process started
here is killed when its context exits.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

BIN = os.environ.get("OBSIDIAN_TC_BIN", "")
if not BIN or not Path(BIN).is_file():
    raise RuntimeError(f"OBSIDIAN_TC_BIN must name the built obsidian-tc binary (got {BIN!r})")

MODERN = "2026-07-28"
CALL_TIMEOUT = 20.0
TEST_TIMEOUT = 60.0
JWT_SECRET = "e2e-secret-0123456789abcdef0123456789abcdef"
ORIGINAL = "# Delete me\n\nScratch note for the e2e suite.\n"
NOTE_BODY = "A line of ordinary prose that keeps the note a realistic size for paging.\n"
DELETE = {"path": "inbox/delete-me.md"}

ANSWERS: dict[str, types.ElicitResult] = {
    "accept": types.ElicitResult(action="accept", content={"approve": True}),
    "accept+approve:false": types.ElicitResult(action="accept", content={"approve": False}),
    "decline": types.ElicitResult(action="decline"),
    "cancel": types.ElicitResult(action="cancel"),
}


@dataclass
class Vault:
    dir: Path
    vault: Path
    cache: Path
    target: Path
    config: Path | None = None

    def place_args(self) -> list[str]:
        """Arguments that point any command at this vault's cache (and config, if written)."""
        return ["--config", str(self.config)] if self.config else ["--cache-dir", str(self.cache)]

    def serve_args(self) -> list[str]:
        return ["serve", *self.place_args(), *([] if self.config else [str(self.vault)])]


@contextlib.contextmanager
def make_vault(notes: int = 3, note_lines: int = 2) -> Iterator[Vault]:
    """A small vault in a fresh temp dir with its cache dir beside it (never inside)."""
    with tempfile.TemporaryDirectory(prefix="obsidian-tc-e2e-py-") as tmp:
        d = Path(tmp)
        vault, cache = d / "vault", d / "cache"
        (vault / "inbox").mkdir(parents=True)
        (vault / "notes").mkdir()
        cache.mkdir()
        target = vault / "inbox" / "delete-me.md"
        target.write_text(ORIGINAL)
        for i in range(1, notes + 1):
            (vault / "notes" / f"note-{i:02d}.md").write_text(f"---\nn: {i}\n---\n# Note {i}\n\n{NOTE_BODY * note_lines}")
        yield Vault(d, vault, cache, target)


def write_config(v: Vault, *, jwt: bool = False, max_response_bytes: int | None = None) -> Path:
    lines = [f"cacheDir = {json.dumps(str(v.cache))}"]
    if max_response_bytes:
        lines += ["", "[governor]", f"maxResponseBytes = {max_response_bytes}"]
    if jwt:
        lines += ["", "[auth]", 'mode = "jwt"', f"jwtSecret = {json.dumps(JWT_SECRET)}"]
    lines += ["", "[[vaults]]", 'id = "e2e"', f"root = {json.dumps(str(v.vault))}", ""]
    v.config = v.dir / "obsidian-tc.toml"
    v.config.write_text("\n".join(lines))
    return v.config


def run_bin(args: list[str], timeout: float = 15.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([BIN, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def mint_jwt(v: Vault, sub: str) -> str:
    r = run_bin(["token", "mint", "--sub", sub, "--config", str(v.config)])
    assert r.returncode == 0, f"token mint --sub {sub} failed: {r.stderr}"
    return r.stdout.strip()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class HttpServer:
    url: str
    log: Path

    def stderr(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


@contextlib.contextmanager
def http_server(v: Vault, extra_args: list[str] | None = None) -> Iterator[HttpServer]:
    """Starts `obsidian-tc serve --http 127.0.0.1:PORT`, waits for /healthz, kills it on exit."""
    port = _free_port()
    log = v.dir / f"http-{port}.log"
    args = [BIN, "serve", "--http", f"127.0.0.1:{port}", *v.serve_args()[1:], *(extra_args or [])]
    with log.open("w") as errf:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf)
    server = HttpServer(f"http://127.0.0.1:{port}/mcp", log)
    try:
        deadline = time.monotonic() + 15
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"serve --http exited early ({proc.returncode}): {server.stderr()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as res:
                    if res.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"serve --http never answered /healthz: {server.stderr()}")
            time.sleep(0.1)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@dataclass
class Connected:
    client: Client
    prompts: list[types.ElicitRequestParams] = field(default_factory=list)
    # Every server notification the session surfaced to its message_handler, in order.
    notifications: list[Any] = field(default_factory=list)


@contextlib.asynccontextmanager
async def connect(
    v: Vault,
    *,
    http: HttpServer | None = None,
    era: str = "legacy",
    answer: types.ElicitResult | types.ErrorData | Callable[[Any], Any] | None = None,
    bearer: str | None = None,
    shim: bool = False,
) -> AsyncIterator[Connected]:
    """The official client connected to the server; `answer=None` means no elicitation capability.

    `answer` is the reply to every prompt, or a function of the prompt's params returning it."""
    prompts: list[types.ElicitRequestParams] = []
    notifications: list[Any] = []

    async def on_message(message: Any) -> None:
        if not isinstance(message, Exception):
            notifications.append(message)

    async def on_elicit(_ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
        prompts.append(params)
        assert answer is not None
        return answer(params) if callable(answer) else answer

    stack = contextlib.AsyncExitStack()
    if http is None:
        args = v.serve_args() + (["--legacy-elicitation-shim"] if shim else [])
        # The server's stderr goes to a log file beside the vault rather than into the test
        # runner's output; a failure quotes it.
        errlog = stack.enter_context((v.dir / "stdio-server.log").open("a"))
        server: Any = stdio_client(StdioServerParameters(command=BIN, args=args), errlog=errlog)
    else:
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        hc = await stack.enter_async_context(
            httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(CALL_TIMEOUT, read=CALL_TIMEOUT))
        )
        server = streamable_http_client(http.url, http_client=hc)
    client = Client(
        server,
        mode=era,
        elicitation_callback=on_elicit if answer is not None else None,
        message_handler=on_message,
        read_timeout_seconds=CALL_TIMEOUT,
    )
    async with stack:
        async with client:
            # The era asked for is the era spoken: a silent fallback would make every
            # round-trip assertion meaningless.
            negotiated = client.protocol_version
            if era == "legacy":
                assert negotiated < MODERN, f"asked for the legacy era, negotiated {negotiated}"
            else:
                assert negotiated == era, f"asked for {era}, negotiated {negotiated}"
            yield Connected(client, prompts, notifications)


def structured(result: types.CallToolResult) -> dict[str, Any]:
    sc = result.structured_content
    assert isinstance(sc, dict), f"no structuredContent in {result!r}"
    return sc


def failure(result: types.CallToolResult, where: str) -> dict[str, Any]:
    """The error envelope of a failed call, asserting the shape of results.error-blocks: no
    structuredContent, the text `Error [<code>]: <message>`, then the envelope's JSON."""
    assert result.is_error, f"{where}: expected a failure, got {result!r}"
    assert result.structured_content is None, f"{where}: a failure with structuredContent: {result!r}"
    assert len(result.content) == 2, f"{where}: a failure of other than two blocks: {result!r}"
    first, second = result.content
    assert isinstance(first, types.TextContent) and isinstance(second, types.TextContent), repr(result)
    err = json.loads(second.text)
    assert first.text == f"Error [{err['code']}]: {err['message']}", f"{where}: first block {first.text!r}"
    assert len(first.text) + len(second.text) <= 10_000, f"{where}: error text over 10,000 characters"
    command = (err.get("recovery") or {}).get("command")
    if command and err["code"] in ("elicit_required", "approval_not_obtained"):
        # r[verify results.error-text.actionable]
        assert command in first.text, f"{where}: the text an agent sees lacks the command: {first.text}"
        assert "obsidian-tc pending" in first.text, f"{where}: the text does not name obsidian-tc pending"
    return err


def success(result: types.CallToolResult, where: str) -> dict[str, Any]:
    """The structured result of a successful call, asserting the shape of results.success."""
    assert not result.is_error, f"{where}: expected success, got {result!r}"
    sc = structured(result)
    text = next((b.text for b in result.content if isinstance(b, types.TextContent)), None)
    assert text is not None and json.loads(text) == sc, f"{where}: text block differs from structuredContent"
    return sc


def elicit_argv(err: dict[str, Any]) -> list[str]:
    """The recovery's `obsidian-tc elicit …` command as argv, checked against the details."""
    command = (err.get("recovery") or {}).get("command")
    assert isinstance(command, str), f"no recovery.command in {err}"
    words = shlex.split(command)
    # r[verify cli.elicit.command-program]
    # The e2e binary is not on PATH, so the command names it by its absolute path.
    assert words[0] == os.path.realpath(BIN), f"the command does not name the binary as found: {command}"
    assert words[1] == "elicit", f"recovery is not an elicit command: {command}"

    def flag(name: str) -> str | None:
        return words[words.index(name) + 1] if name in words else None

    d = err["details"]
    assert flag("--hash") == d["args_hash"], command
    assert flag("--state-fp") == d["state_fp"], command
    assert flag("--tool") == d["tool"], command
    assert flag("--caller"), command
    return words


def run_elicit(v: Vault, err: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """The recovery's elicit command exactly as printed: it names the server's --config or
    --cache-dir itself (r[verify cli.elicit.command-works])."""
    argv = elicit_argv(err)
    for flag in v.place_args():
        assert flag in argv, f"the command does not name {v.place_args()}: {argv}"
    # r[verify cli.elicit.command-cache-dir]
    assert "--cache-dir" in argv, f"the command does not carry --cache-dir: {argv}"
    # The command exactly as printed, its program included.
    return subprocess.run(argv, capture_output=True, text=True, timeout=15.0, stdin=subprocess.DEVNULL)


def run_bounded(body: Callable[[], Any]) -> None:
    """Runs the async test `body` to its end, failing it after TEST_TIMEOUT seconds."""

    async def bounded() -> None:
        with anyio.fail_after(TEST_TIMEOUT):
            await body()

    anyio.run(bounded)


async def call_bounded(c: Connected, name: str, args: dict[str, Any]) -> Any:
    """One tools/call, failing after CALL_TIMEOUT (and a little) seconds."""
    with anyio.fail_after(CALL_TIMEOUT + 2):
        return await c.client.call_tool(name, args)
