// Shared fixtures for the TypeScript end-to-end suite: a temporary vault, the built
// `obsidian-tc` binary (path in OBSIDIAN_TC_BIN) served over stdio or Streamable HTTP,
// and the official `@modelcontextprotocol/client` connected to it in either protocol era.
// Every await is bounded and every process spawned here is killed by `cleanup()`.

import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, writeFileSync, existsSync, rmSync, realpathSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

export const BIN = process.env.OBSIDIAN_TC_BIN;
if (!BIN || !existsSync(BIN)) {
    throw new Error(`OBSIDIAN_TC_BIN must name the built obsidian-tc binary (got ${BIN ?? 'nothing'})`);
}

export const MODERN = '2026-07-28';
export const CALL_TIMEOUT_MS = 20_000;
const CONNECT_TIMEOUT_MS = 15_000;
const JWT_SECRET = 'e2e-secret-0123456789abcdef0123456789abcdef';

/** Rejects after `ms` with a message naming what was awaited. */
export function bounded(promise, ms, what) {
    let timer;
    const timeout = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

const toClose = [];
const tempDirs = [];

/** Closes every client, kills every server process and removes every temp dir made here. */
export async function cleanup() {
    while (toClose.length) {
        const close = toClose.pop();
        try {
            await bounded(Promise.resolve().then(close), 5_000, 'close');
        } catch {
            // A close that failed or hung must not keep the others open.
        }
    }
    for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

const NOTE_BODY = 'A line of ordinary prose that keeps the note a realistic size for paging.\n';

/**
 * A small vault in a fresh temp dir, with its cache dir beside it (never inside):
 * `inbox/delete-me.md` (the gated target) and `notes/note-NN.md` (for paging).
 */
export function makeVault({ notes = 3, noteLines = 2 } = {}) {
    const dir = mkdtempSync(join(tmpdir(), 'obsidian-tc-e2e-'));
    tempDirs.push(dir);
    const vault = join(dir, 'vault');
    const cache = join(dir, 'cache');
    mkdirSync(join(vault, 'inbox'), { recursive: true });
    mkdirSync(join(vault, 'notes'), { recursive: true });
    mkdirSync(cache);
    writeFileSync(join(vault, 'inbox', 'delete-me.md'), '# Delete me\n\nScratch note for the e2e suite.\n');
    for (let i = 1; i <= notes; i++) {
        const name = `note-${String(i).padStart(2, '0')}.md`;
        writeFileSync(join(vault, 'notes', name), `---\nn: ${i}\n---\n# Note ${i}\n\n${NOTE_BODY.repeat(noteLines)}`);
    }
    return { dir, vault, cache, target: join(vault, 'inbox', 'delete-me.md') };
}

/** A config file for the vault: jwt mode when `jwt`, plus optional governor cap. */
export function writeConfig(v, { jwt = false, maxResponseBytes, shim = false } = {}) {
    const lines = [`cacheDir = ${JSON.stringify(v.cache)}`, `legacyElicitationShim = ${shim}`];
    if (maxResponseBytes) lines.push('', '[governor]', `maxResponseBytes = ${maxResponseBytes}`);
    if (jwt) lines.push('', '[auth]', 'mode = "jwt"', `jwtSecret = ${JSON.stringify(JWT_SECRET)}`);
    lines.push('', '[[vaults]]', 'id = "e2e"', `root = ${JSON.stringify(v.vault)}`, '');
    const file = join(v.dir, 'obsidian-tc.toml');
    writeFileSync(file, lines.join('\n'));
    v.config = file;
    return file;
}

/** Arguments that point any command at this vault's cache (and config, if written). */
function placeArgs(v) {
    return v.config ? ['--config', v.config] : ['--cache-dir', v.cache];
}

/** Runs the binary with args; resolves {code, stdout, stderr}, never rejects on exit status. */
export function runBin(args, timeoutMs = 15_000) {
    return runProgram(BIN, args, timeoutMs);
}

/** Runs `program` (a path, as a pasted command would) with `args`; returns {code, stdout, stderr}. */
export function runProgram(program, args, timeoutMs = 15_000) {
    return new Promise((resolve, reject) => {
        execFile(program, args, { timeout: timeoutMs, encoding: 'utf8' }, (error, stdout, stderr) => {
            if (error && typeof error.code !== 'number') {
                reject(new Error(`${program} ${args.join(' ')} failed to run: ${error.message}\n${stderr}`));
                return;
            }
            resolve({ code: error ? error.code : 0, stdout, stderr });
        });
    });
}

export async function mintJwt(v, sub) {
    const r = await runBin(['token', 'mint', '--sub', sub, '--config', v.config]);
    assert.equal(r.code, 0, `token mint --sub ${sub} failed: ${r.stderr}`);
    return r.stdout.trim();
}

function freePort() {
    return new Promise((resolve, reject) => {
        const srv = createServer();
        srv.unref();
        srv.on('error', reject);
        srv.listen(0, '127.0.0.1', () => {
            const { port } = srv.address();
            srv.close(() => resolve(port));
        });
    });
}

/** Starts `obsidian-tc serve --http 127.0.0.1:PORT` and waits for /healthz. Returns {url, stderr()}. */
export async function startHttp(v, { extraArgs = [] } = {}) {
    const port = await freePort();
    const args = ['serve', '--http', `127.0.0.1:${port}`, ...placeArgs(v), ...(v.config ? [] : [v.vault]), ...extraArgs];
    const child = spawn(BIN, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => {
        stderr += d;
    });
    let exited = null;
    child.on('exit', (code, signal) => {
        exited = { code, signal };
    });
    toClose.push(
        () =>
            new Promise((resolve) => {
                if (exited) return resolve();
                child.once('exit', resolve);
                child.kill('SIGTERM');
                setTimeout(() => child.kill('SIGKILL'), 2_000).unref();
            })
    );
    const base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + CONNECT_TIMEOUT_MS;
    for (;;) {
        if (exited) throw new Error(`serve --http exited early (${JSON.stringify(exited)}): ${stderr}`);
        try {
            const res = await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(1_000) });
            if (res.ok) break;
        } catch {
            // not listening yet
        }
        if (Date.now() > deadline) throw new Error(`serve --http never answered /healthz: ${stderr}`);
        await new Promise((r) => setTimeout(r, 100));
    }
    return { url: `${base}/mcp`, stderr: () => stderr };
}

/**
 * An official client connected to the server.
 * - `transport`: 'stdio' (spawns `serve`) or an `{url}` from startHttp.
 * - `era`: 'legacy' or MODERN.
 * - `answer`: an elicitation answer (object, or a function returning one) for every prompt, or null for a client
 *   WITHOUT the elicitation capability. Prompts are recorded in the returned `prompts`.
 * - `bearer`: a JWT for the HTTP Authorization header.
 * - `shim`: pass --legacy-elicitation-shim to a stdio server.
 * - `elicitation`: the capability object declared with an `answer` (form mode by default).
 * - `record`: keep every JSON-RPC message on the wire in the returned `wire` ({inbound, outbound}),
 *   as the transport carries it (the client's own handlers, e.g. its progress router, still run).
 */
export async function connect(v, { transport = 'stdio', era = 'legacy', answer = null, bearer, shim = false, manual = false, elicitation = { form: {} }, record = false } = {}) {
    const prompts = [];
    const wire = { inbound: [], outbound: [] };
    const options = {
        capabilities: answer ? { elicitation } : {},
        versionNegotiation: era === 'legacy' ? { mode: 'legacy' } : { mode: { pin: era } },
    };
    if (manual) options.inputRequired = { autoFulfill: false };
    const client = new Client({ name: 'obsidian-tc-e2e-ts', version: '1.0.0' }, options);
    if (answer) {
        client.setRequestHandler('elicitation/create', async (request) => {
            prompts.push(request.params);
            return typeof answer === 'function' ? answer(request) : answer;
        });
    }
    let stderr = () => '';
    let t;
    if (transport === 'stdio') {
        const args = ['serve', ...placeArgs(v), ...(v.config ? [] : [v.vault])];
        if (shim) args.push('--legacy-elicitation-shim');
        t = new StdioClientTransport({ command: BIN, args, stderr: 'pipe' });
        let buf = '';
        t.stderr?.on('data', (d) => {
            buf += d;
        });
        stderr = () => buf;
    } else {
        const headers = bearer ? { Authorization: `Bearer ${bearer}` } : {};
        t = new StreamableHTTPClientTransport(new URL(transport.url), { requestInit: { headers } });
        stderr = transport.stderr;
    }
    if (record) {
        // Set before connect: the client chains a transport's existing onmessage ahead of its own.
        t.onmessage = (message) => {
            wire.inbound.push(message);
        };
        const send = t.send.bind(t);
        t.send = (message, opts) => {
            wire.outbound.push(message);
            return send(message, opts);
        };
    }
    toClose.push(() => client.close());
    try {
        await bounded(client.connect(t, { timeout: CONNECT_TIMEOUT_MS }), CONNECT_TIMEOUT_MS + 1_000, `connect (${era})`);
    } catch (e) {
        throw new Error(`connect failed (${era}, ${transport === 'stdio' ? 'stdio' : 'http'}): ${e.message}\nserver stderr:\n${stderr()}`);
    }
    // The era the test asked for is the era the connection speaks: a modern pin that fell
    // back to 2025 (or the reverse) would make every round-trip assertion meaningless.
    const negotiated = client.getNegotiatedProtocolVersion();
    if (era === 'legacy') {
        assert.ok(negotiated && negotiated < MODERN, `asked for the legacy era, negotiated ${negotiated}`);
    } else {
        assert.equal(negotiated, era, `asked for ${era}, negotiated ${negotiated}`);
    }
    return { client, prompts, stderr, wire };
}

/** tools/call, bounded; returns the CallToolResult. */
export function call(c, name, args, opts = {}) {
    return bounded(
        c.client.callTool({ name, arguments: args }, { timeout: CALL_TIMEOUT_MS, ...opts }),
        CALL_TIMEOUT_MS + 2_000,
        `tools/call ${name}`
    );
}

/**
 * The error envelope of a failed call, asserting the result shape of results.error-blocks:
 * no structuredContent, the text `Error [<code>]: <message>`, then the envelope's JSON.
 */
export function failure(result, where = '') {
    assert.equal(result.isError, true, `${where}: expected a failure, got ${JSON.stringify(result)}`);
    assert.equal(result.structuredContent, undefined, `${where}: a failure with structuredContent: ${JSON.stringify(result)}`);
    assert.equal(result.content?.length, 2, `${where}: a failure of other than two blocks: ${JSON.stringify(result)}`);
    const [first, second] = result.content;
    assert.ok(first.type === 'text' && second.type === 'text', `${where}: non-text blocks: ${JSON.stringify(result)}`);
    const err = JSON.parse(second.text);
    assert.ok(typeof err.code === 'string', `${where}: envelope without a code: ${second.text}`);
    assert.equal(first.text, `Error [${err.code}]: ${err.message}`, `${where}: first block`);
    assert.ok(first.text.length + second.text.length <= 10_000, `${where}: error text over 10,000 characters`);
    if (err.recovery?.command && (err.code === 'elicit_required' || err.code === 'approval_not_obtained')) {
        // r[verify results.error-text.actionable]
        assert.ok(first.text.includes(err.recovery.command), `${where}: the text an agent sees lacks the command: ${first.text}`);
        assert.ok(first.text.includes('obsidian-tc pending'), `${where}: the text does not name obsidian-tc pending`);
    }
    return err;
}

/** The structured result of a successful call, asserting the shape of results.success. */
export function success(result, where = '') {
    assert.notEqual(result.isError, true, `${where}: expected success, got ${JSON.stringify(result)}`);
    const sc = result.structuredContent;
    assert.ok(sc && typeof sc === 'object', `${where}: success without structuredContent: ${JSON.stringify(result)}`);
    const text = result.content?.find((b) => b.type === 'text')?.text;
    assert.deepEqual(JSON.parse(text), sc, `${where}: text block does not hold the same JSON`);
    return sc;
}

/**
 * Splits the recovery's `obsidian-tc elicit …` command into argv (simple shell words with
 * single or double quotes) and checks it names the raised request.
 */
export function elicitArgv(err) {
    const command = err.recovery?.command;
    assert.ok(typeof command === 'string', `no recovery.command in ${JSON.stringify(err)}`);
    const words = [];
    const re = /'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+)/g;
    let m;
    while ((m = re.exec(command))) words.push(m[1] ?? m[2]?.replace(/\\(.)/g, '$1') ?? m[3]);
    // r[verify cli.elicit.command-program]
    // The e2e binary is not on PATH, so the command names it by its absolute path.
    assert.equal(words[0], realpathSync(BIN), `recovery command does not name the binary as it can be found: ${command}`);
    assert.equal(words[1], 'elicit', `recovery command is not elicit: ${command}`);
    const flag = (name) => {
        const i = words.indexOf(name);
        return i > 0 ? words[i + 1] : undefined;
    };
    assert.equal(flag('--hash'), err.details.args_hash, `--hash differs from details.args_hash: ${command}`);
    assert.equal(flag('--state-fp'), err.details.state_fp, `--state-fp differs from details.state_fp: ${command}`);
    assert.equal(flag('--tool'), err.details.tool, `--tool differs from details.tool: ${command}`);
    assert.ok(flag('--caller'), `no --caller in ${command}`);
    return words;
}

/**
 * Runs the recovery's elicit command exactly as printed (it names the server's --config or
 * --cache-dir itself: r[verify cli.elicit.command-works]); returns {code, stdout, stderr}.
 */
export function runElicit(v, err) {
    const [program, ...argv] = elicitArgv(err);
    const flags = placeArgs(v);
    assert.ok(argv.includes(flags[0]) && argv.includes(flags[1]), `the command does not name ${flags.join(' ')}: ${argv.join(' ')}`);
    // r[verify cli.elicit.command-cache-dir]
    assert.ok(argv.includes('--cache-dir'), `the command does not carry --cache-dir: ${argv.join(' ')}`);
    return runProgram(program, argv);
}

export { existsSync, join };
