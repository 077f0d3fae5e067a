// The tool framework as the official TypeScript client sees it through the built binary:
// every tool's `outputSchema` (which this client enforces on callTool once it has the
// listing), `notifications/progress` for a call that asks for them (and none for a call
// that does not), and the summary of the call in the confirmation form a human reads.

import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';

import { MODERN, CALL_TIMEOUT_MS, bounded, cleanup, makeVault, connect, startHttp, call, failure, success, join } from './harness.mjs';

const TEST_TIMEOUT = 60_000;
const ACCEPT = { action: 'accept', content: { approve: true } };

/** The routes on which a client with form elicitation answers the confirmation itself. */
const ROUND_TRIPS = [
    { name: 'stdio 2026-07-28', transport: 'stdio', era: MODERN, caller: 'stdio' },
    { name: 'http 2026-07-28', transport: 'http', era: MODERN, caller: 'http-local' },
    { name: 'stdio legacy + shim', transport: 'stdio', era: 'legacy', shim: true, caller: 'stdio' },
];

async function open(route, answer, { vault, record = false } = {}) {
    const v = vault ?? makeVault();
    const transport = route.transport === 'http' ? await startHttp(v) : 'stdio';
    const c = await connect(v, { transport, era: route.era, answer, shim: route.shim, record });
    return { v, c };
}

/** Writes `rel` (a vault-relative path) with `text`, creating its folder. */
function put(v, rel, text) {
    const file = join(v.vault, rel);
    mkdirSync(join(file, '..'), { recursive: true });
    writeFileSync(file, text);
}

/** One successful call of each of the twelve note tools and of the subsystem tools that need no
 * engine or repository set up, in an order that makes each one valid. */
const CALLS = [
    ['list_notes', {}],
    ['read_notes', { folder: 'notes' }],
    ['write_note', { path: 'drafts/w.md', content: 'hello\n', mode: 'create' }],
    ['copy_note', { from: 'drafts/w.md', to: 'drafts/w-copy.md' }],
    ['move_note', { from: 'drafts/w-copy.md', to: 'drafts/w-moved.md' }],
    ['update_frontmatter', { path: 'notes/note-02.md', operation: 'merge', data: { tag: 'e2e' } }],
    ['update_task', { path: 'tasks.md', line: 1, status: 'done' }],
    ['rewrite_link', { from_target: 'notes/note-01', to_target: 'notes/note-03' }],
    ['prune_hub_links', { path: 'hub.md' }],
    ['commit_wiki_page', { path: 'wiki/page.md', content: '# Page\n\nGenerated.\n' }],
    ['delete_note', { path: 'inbox/delete-me.md' }],
    ['restore_note', { path: 'inbox/delete-me.md' }],
    ['search_notes', { query: 'note' }],
    ['capture_note', { content: 'a thought to keep\n', tags: ['e2e'] }],
    ['list_captures', {}],
    ['upsert_entity', { type: 'person', name: 'Ada', observations: ['wrote notes'] }],
    ['search_entities', { query: 'Ada' }],
    ['reset_vault_cache', {}],
];

function schemaVault() {
    const v = makeVault();
    put(v, 'tasks.md', '- [ ] water the plants\n');
    put(v, 'hub.md', '# Hub\n\n- [[notes/note-01]]\n- [[gone-for-good]]\n');
    return v;
}

afterEach(cleanup);

describe('output schemas (TS)', () => {
    for (const route of ROUND_TRIPS) {
        it(`${route.name}: every tool advertises an object outputSchema that its results satisfy`, { timeout: TEST_TIMEOUT }, async () => {
            // r[verify tools.output-schema]
            const { c } = await open(route, ACCEPT, { vault: schemaVault() });
            const where = route.name;
            // listTools() fills the client's cache of the listing; from then on callTool
            // validates each result's structuredContent against the tool's outputSchema and
            // throws when it does not match.
            const { tools } = await bounded(c.client.listTools(), CALL_TIMEOUT_MS, 'tools/list');
            for (const tool of tools) {
                assert.equal(tool.outputSchema?.type, 'object', `${where}: ${tool.name} outputSchema ${JSON.stringify(tool.outputSchema)}`);
                assert.equal(typeof tool.outputSchema.properties, 'object', `${where}: ${tool.name} outputSchema without properties`);
            }
            const listed = new Set(tools.map((t) => t.name));
            for (const [name, args] of CALLS) {
                assert.ok(listed.has(name), `${where}: ${name} is not in tools/list`);
                let result;
                try {
                    result = await call(c, name, args);
                } catch (e) {
                    assert.fail(`${where}: the client refused ${name}(${JSON.stringify(args)}): ${e.message}\nserver stderr:\n${c.stderr()}`);
                }
                success(result, `${where} ${name}`);
            }
        });
    }

    it('the client really enforces an outputSchema: a stricter one than advertised is refused', { timeout: TEST_TIMEOUT }, async () => {
        // Guards the test above: with this client version, a result that does not satisfy the
        // schema the client holds is an error on callTool, not a silent pass.
        // r[verify tools.output-schema]
        const { c } = await open(ROUND_TRIPS[0], null);
        const { tools } = await bounded(c.client.listTools(), CALL_TIMEOUT_MS, 'tools/list');
        const listed = tools.find((t) => t.name === 'list_notes');
        const stricter = { ...listed, outputSchema: { ...listed.outputSchema, required: [...(listed.outputSchema.required ?? []), 'never_sent'] } };
        await assert.rejects(
            bounded(c.client.callTool({ name: 'list_notes', arguments: {} }, { timeout: CALL_TIMEOUT_MS, toolDefinition: stricter }), CALL_TIMEOUT_MS + 2_000, 'list_notes'),
            /output schema/i
        );
        success(await call(c, 'list_notes', {}), 'list_notes against the advertised schema');
    });
});

/** Three notes that link to [[old]] (one of them twice), beside the three plain ones. */
function linkVault() {
    const v = makeVault();
    put(v, 'notes/l1.md', 'See [[old]] and [[old|the old one]].\n');
    put(v, 'notes/l2.md', 'Also [[old]].\n');
    put(v, 'notes/l3.md', 'And ![[old]] embedded.\n');
    return v;
}

/** The outbound tools/call requests for `tool` recorded since `from`. */
function sentCalls(c, tool, from = 0) {
    return c.wire.outbound.slice(from).filter((m) => m.method === 'tools/call' && m.params?.name === tool);
}

function progressOnWire(c, from = 0) {
    return c.wire.inbound.slice(from).filter((m) => m.method === 'notifications/progress');
}

describe('progress of a confirmed rewrite_link (TS)', () => {
    for (const route of ROUND_TRIPS) {
        it(`${route.name}: onprogress gets increasing reports with total; no callback, no report`, { timeout: TEST_TIMEOUT }, async () => {
            // r[verify tools.progress]
            // r[verify tools.rewrite-link]
            const { v, c } = await open(route, ACCEPT, { vault: linkVault(), record: true });
            const where = route.name;
            const clientErrors = [];
            c.client.onerror = (e) => clientErrors.push(String(e?.message ?? e));

            const reports = [];
            const args = { from_target: 'old', to_target: 'new', dry_run: false };
            const done = success(await call(c, 'rewrite_link', args, { onprogress: (p) => reports.push(p) }), `${where} with onprogress`);
            await new Promise((r) => setImmediate(r)); // let the client's deferred notification handlers run
            assert.equal(done.applied, true, `${where}: ${JSON.stringify(done)}`);
            assert.equal(done.notes.length, 3, `${where}: ${JSON.stringify(done)}`);
            assert.equal(readFileSync(join(v.vault, 'notes', 'l2.md'), 'utf8'), 'Also [[new]].\n', `${where}: the rewrite did not happen`);

            // On the wire, the server's reports, in order, all before the result: increasing,
            // each with total = the number of notes, the last one at total, and each carrying
            // the token of the request that asked for it.
            const tokens = new Set(sentCalls(c, 'rewrite_link').map((m) => m.params?._meta?.progressToken).filter((t) => t !== undefined));
            assert.ok(tokens.size > 0, `${where}: the client sent no progressToken`);
            const onWire = progressOnWire(c);
            for (const n of onWire) assert.ok(tokens.has(n.params.progressToken), `${where}: progress for a token never sent: ${JSON.stringify(n)}`);
            const sent = onWire.map(({ params: { progressToken, ...rest } }) => rest);
            assert.ok(sent.length >= 2, `${where}: expected a report before the writes and after each, got ${JSON.stringify(sent)}`);
            for (const p of sent) assert.equal(p.total, done.notes.length, `${where}: total is not the number of notes: ${JSON.stringify(sent)}`);
            for (let i = 1; i < sent.length; i++) {
                assert.ok(sent[i].progress > sent[i - 1].progress, `${where}: progress does not increase: ${JSON.stringify(sent)}`);
            }
            assert.equal(sent.at(-1).progress, done.notes.length, `${where}: the last report is not at total: ${JSON.stringify(sent)}`);
            const result = c.wire.inbound.findIndex((m) => m.id !== undefined && m.method === undefined && m.result?.structuredContent?.applied === true);
            assert.ok(
                c.wire.inbound.every((m, i) => m.method !== 'notifications/progress' || i < result),
                `${where}: a report came after the result`
            );

            // What onprogress got. On 2026-07-28 this client also reports its own input_required
            // rounds there ("Fulfilling input required by 'tools/call' (round 1)", no total): not
            // the server's. And this client (2.4) dispatches a notification a microtask later but
            // the response at once, so a report read in the same chunk as the result can reach a
            // request it has already settled: it is dropped with "Received a progress notification
            // for an unknown token". So the callback gets the server's reports in order, maybe
            // without the last few, and each one missing is one such client error.
            const got = reports.filter((p) => !/^Fulfilling input required/.test(p.message ?? ''));
            assert.ok(got.length >= 1, `${where}: onprogress got none of ${JSON.stringify(sent)}`);
            assert.deepEqual(got, sent.slice(0, got.length), `${where}: onprogress got ${JSON.stringify(got)}, the wire had ${JSON.stringify(sent)}`);
            const dropped = clientErrors.filter((e) => /progress notification for an unknown token/.test(e));
            assert.equal(got.length + dropped.length, sent.length, `${where}: onprogress ${JSON.stringify(got)}, wire ${JSON.stringify(sent)}, client errors ${JSON.stringify(clientErrors)}`);

            // The same kind of call without a callback: no token goes out, nothing comes back.
            put(v, 'notes/l4.md', 'Now [[new]].\n');
            const mark = { out: c.wire.outbound.length, in: c.wire.inbound.length, errors: clientErrors.length };
            const again = success(await call(c, 'rewrite_link', { from_target: 'new', to_target: 'newer', dry_run: false }), `${where} without onprogress`);
            assert.equal(again.applied, true, `${where}: ${JSON.stringify(again)}`);
            const plain = sentCalls(c, 'rewrite_link', mark.out);
            assert.ok(plain.length > 0, `${where}: the second call is not on the wire`);
            for (const m of plain) assert.equal(m.params?._meta?.progressToken, undefined, `${where}: a progressToken went out: ${JSON.stringify(m)}`);
            // Give a late notification the time to arrive before saying there was none.
            await new Promise((r) => setTimeout(r, 200));
            assert.deepEqual(progressOnWire(c, mark.in), [], `${where}: progress sent without a token`);
            assert.deepEqual(clientErrors.slice(mark.errors), [], `${where}: client errors after the call without a token`);
        });
    }
});

describe('summary in the confirmation form (TS)', () => {
    for (const route of ROUND_TRIPS) {
        it(`${route.name}: a write_note overwrite shows its target, sizes and diff`, { timeout: TEST_TIMEOUT }, async () => {
            // r[verify tools.summary]
            // r[verify tools.summary.write]
            // r[verify tools.write-note.confirm]
            const v = makeVault();
            put(v, 'a.md', 'line one\nold line\n');
            // The first prompt is cancelled (so its refusal hands us the args_hash), the second approved.
            let asked = 0;
            const { c } = await open(route, () => (++asked === 1 ? { action: 'cancel' } : ACCEPT), { vault: v });
            const where = route.name;
            const args = { path: 'a.md', content: 'line one\nnew line\n' };
            const refused = failure(await call(c, 'write_note', args), `${where} cancelled`);
            assert.equal(refused.code, 'approval_not_obtained', `${where}: ${JSON.stringify(refused)}`);
            success(await call(c, 'write_note', args), `${where} approved (server stderr: ${c.stderr()})`);
            assert.equal(readFileSync(join(v.vault, 'a.md'), 'utf8'), args.content, `${where}: the approved write did not land`);
            assert.equal(c.prompts.length, 2, `${where}: prompted ${c.prompts.length} times`);

            for (const prompt of c.prompts) {
                const message = prompt.message ?? '';
                const lines = message.split('\n');
                const has = (re, what) => assert.ok(lines.some((l) => re.test(l)), `${where}: no ${what} line in the form message:\n${message}`);
                has(new RegExp(`^write_note in vault \\S+ for caller ${route.caller}$`), 'tool/vault/caller');
                has(new RegExp(`^args_hash ${refused.details.args_hash}$`), `args_hash ${refused.details.args_hash}`);
                assert.ok(lines.includes('  target: a.md'), `${where}: no '  target: a.md' line in:\n${message}`);
                has(/^\s*size: 18 bytes -> 18 bytes$/, 'size');
                has(/^\s*-old line$/, '-old line');
                has(/^\s*\+new line$/, '+new line');
                has(/^\s* line one$/, 'unchanged context');
            }
            assert.equal(c.prompts[0].message, c.prompts[1].message, `${where}: the same call was summarised differently`);
        });
    }
});
