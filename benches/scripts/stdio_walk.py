#!/usr/bin/env python3
"""Whole-process timing of a full read_notes walk over stdio, with a raw JSON-RPC client.

    python3 benches/scripts/stdio_walk.py [VAULT_DIR] [--bin target/release/obsidian-tc] [--runs 5]

VAULT_DIR defaults to the reference bench vault (10,000 notes, ~20 MB), which
`cargo bench -p tc-benches --bench tc -- read_notes_walk` generates under
target/tc-bench-vaults/. Per run it spawns `obsidian-tc serve VAULT_DIR` with a fresh cache
directory, times the first tools/list answer after spawn, then walks `read_notes` over the
whole vault following next_cursor, and reports the wall time of the walk, the pages, the
largest response line as sent against governor.maxResponseBytes, and the server's peak
resident memory (VmHWM) at the end. The server runs with governor.pageBytes set to the cap
(1,000,000, a config file written next to the cache), so a page is as large as the cap allows
and the walk compares with a server whose pages fill its response cap. A raw client keeps the client's own cost out of the
figure: it reads each line and looks only at the cursor.
"""

import argparse
import glob
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

CAP = 1_000_000
# The cursor as structuredContent holds it (the text copy has it escaped, \"next_cursor\").
NEXT_CURSOR = re.compile(rb'"next_cursor":(?:"([^"]*)"|null)')
NOTE_PATH = re.compile(rb'\{"path":"')


def default_vault(root):
    hits = sorted(glob.glob(os.path.join(root, "target", "tc-bench-vaults", "*n10000-m2000*", "vault")))
    hits = hits or sorted(glob.glob(os.path.join(root, "target", "tc-bench-vaults", "*", "vault")))
    return hits[0] if hits else None


def write_config(vault, cache):
    """A config serving `vault` with pages as large as the cap (governor.pageBytes = cap)."""
    path = os.path.join(cache, "bench.toml")
    with open(path, "w") as out:
        out.write(
            f"cacheDir = {json.dumps(cache)}\n\n[governor]\nmaxResponseBytes = 1000000\n"
            f"pageBytes = 1000000\n\n[[vaults]]\nid = \"bench\"\nroot = {json.dumps(os.path.abspath(vault))}\n"
        )
    return path


class Server:
    def __init__(self, binary, vault, cache):
        self.proc = subprocess.Popen(
            [binary, "serve", "--config", write_config(vault, cache)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.next_id = 1

    def send(self, method, params=None, notify=False):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        if not notify:
            message["id"] = self.next_id
            self.next_id += 1
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def answer(self):
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the server closed stdout")
            if b'"id"' in line and b'"method"' not in line[:40]:
                return line

    def peak_rss_kib(self):
        try:
            with open(f"/proc/{self.proc.pid}/status") as status:
                for row in status:
                    if row.startswith("VmHWM:"):
                        return int(row.split()[1])
        except OSError:
            return None
        return None

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def run_once(binary, vault):
    with tempfile.TemporaryDirectory() as cache:
        spawned = time.perf_counter()
        server = Server(binary, vault, cache)
        server.send("initialize", {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "stdio-walk", "version": "0"},
        })
        server.answer()
        server.send("notifications/initialized", notify=True)
        server.send("tools/list", {})
        server.answer()
        listed = time.perf_counter() - spawned
        started = time.perf_counter()
        cursor, pages, largest, notes = None, 0, 0, 0
        while True:
            arguments = {"folder": ""}
            if cursor:
                arguments["cursor"] = cursor
            server.send("tools/call", {"name": "read_notes", "arguments": arguments})
            line = server.answer()
            largest = max(largest, len(line) - 1)
            if b'"isError":true' in line:
                raise RuntimeError(json.loads(line)["result"]["structuredContent"])
            # Only the cursor is read: parsing a megabyte of JSON per page in Python would
            # time the client, not the server.
            match = NEXT_CURSOR.search(line)
            pages += 1
            cursor = match.group(1).decode() if match and match.group(1) else None
            if not cursor:
                break
        walk = time.perf_counter() - started
        rss = server.peak_rss_kib()
        notes = None
        server.close()
        return listed, walk, pages, notes, largest, rss


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault", nargs="?", default=default_vault(root))
    parser.add_argument("--bin", default=os.path.join(root, "target", "release", "obsidian-tc"))
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    if not args.vault:
        sys.exit("no vault: run `cargo bench -p tc-benches --bench tc -- read_notes_walk` once, or name one")
    runs = [run_once(args.bin, args.vault) for _ in range(args.runs)]
    listed = [r[0] for r in runs]
    walks = [r[1] for r in runs]
    _, _, pages, notes, largest, rss = runs[-1]
    print(f"vault {args.vault}: walked in {pages} pages")
    print(f"first tools/list after spawn: median {statistics.median(listed) * 1000:.1f} ms")
    print(f"full read_notes walk over stdio: median {statistics.median(walks) * 1000:.0f} ms "
          f"(min {min(walks) * 1000:.0f}, max {max(walks) * 1000:.0f}, {len(walks)} runs)")
    print(f"largest response line: {largest} bytes (cap {CAP}: {'within' if largest <= CAP else 'OVER'})")
    if rss is not None:
        print(f"server peak RSS after the walk: {rss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
