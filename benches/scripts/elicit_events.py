#!/usr/bin/env python3
"""Whole-process timing of `obsidian-tc elicit` on a cache.db with a million events.

    python3 benches/scripts/elicit_events.py [--bin target/release/obsidian-tc] [--events 1000000]

Starts `obsidian-tc serve` on a scratch vault and cache, has one `delete_note` refused with
elicit_required (so a raised request stands behind the hash), stops the server, fills the
events table with N more rows (Python's sqlite3), and times the printed `obsidian-tc elicit`
command (no --vault: the vault is found by index) over 30 runs, then the same with an empty
log for comparison.
"""

import argparse
import json
import os
import shlex
import sqlite3
import statistics
import subprocess
import tempfile
import time


def refused_command(binary, vault, cache):
    server = subprocess.Popen([binary, "serve", vault, "--cache-dir", cache],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(message):
        server.stdin.write((json.dumps(message) + "\n").encode())
        server.stdin.flush()

    def answer(wanted):
        while True:
            line = json.loads(server.stdout.readline())
            if line.get("id") == wanted:
                return line

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}})
    answer(1)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
          "params": {"name": "delete_note", "arguments": {"path": "a.md"}}})
    refusal = answer(2)["result"]["structuredContent"]
    server.stdin.close()
    server.wait()
    return shlex.split(refusal["recovery"]["command"])


def time_runs(argv, runs=30):
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True)
        times.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(done.stderr.decode())
    return statistics.median(times) * 1000, min(times) * 1000


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.path.join(root, "target", "release", "obsidian-tc"))
    parser.add_argument("--events", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        vault, cache = os.path.join(scratch, "vault"), os.path.join(scratch, "cache")
        os.makedirs(vault)
        with open(os.path.join(vault, "a.md"), "w") as note:
            note.write("a\n")
        argv = refused_command(args.bin, vault, cache)
        argv[0] = args.bin
        empty = time_runs(argv)
        db = sqlite3.connect(os.path.join(cache, "cache.db"))
        db.executemany(
            "INSERT INTO events (at, name, vault, tool, args_hash, caller_hash, detail) VALUES (?,?,?,?,?,?,?)",
            ((1_796_040_000_000 + i, "tc.elicit.requested", "vault", "delete_note", "%032x" % i, "c" * 16, "{}")
             for i in range(args.events)))
        db.commit()
        # As a long-running server's checkpoints would have left it.
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        full = time_runs(argv)
    print(f"elicit, empty event log: median {empty[0]:.1f} ms (min {empty[1]:.1f})")
    print(f"elicit, {args.events} events: median {full[0]:.1f} ms (min {full[1]:.1f})")


if __name__ == "__main__":
    main()
