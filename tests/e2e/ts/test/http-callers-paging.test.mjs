// Two JWT callers on one Streamable HTTP server who cannot redeem each other's approvals
// (CLI token and 2026-07-28 requestState), and a read_notes paging walk, driven through the
// built binary by the official TypeScript client.

import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';

import { MODERN, CALL_TIMEOUT_MS, bounded, cleanup, makeVault, writeConfig, mintJwt, connect, startHttp, call, failure, success, runElicit } from './harness.mjs';

const TEST_TIMEOUT = 60_000;
const DELETE = { path: 'inbox/delete-me.md' };

afterEach(cleanup);

describe('two JWT callers on one HTTP server (TS)', () => {
    for (const era of ['legacy', MODERN]) {
        it(`${era}: B cannot redeem the CLI token minted for A; A can`, { timeout: TEST_TIMEOUT }, async () => {
            // r[verify auth.isolation]
            // r[verify auth.jwt.caller]
            // r[verify approval.bound]
            // r[verify gate.token.bound]
            // r[verify cli.elicit.caller-default]
            const v = makeVault();
            writeConfig(v, { jwt: true });
            const [tokA, tokB] = [await mintJwt(v, 'alice'), await mintJwt(v, 'bob')];
            const http = await startHttp(v);
            const a = await connect(v, { transport: http, era, bearer: tokA });
            const b = await connect(v, { transport: http, era, bearer: tokB });

            const errA = failure(await call(a, 'delete_note', DELETE), 'alice first call');
            assert.equal(errA.code, 'elicit_required', JSON.stringify(errA));
            assert.match(errA.recovery?.command ?? '', /--caller alice(\s|$)/, JSON.stringify(errA.recovery));
            const minted = await runElicit(v, errA);
            assert.equal(minted.code, 0, `elicit for alice failed: ${minted.stderr}`);
            const token = minted.stdout.trim();

            const errB = failure(await call(b, 'delete_note', { ...DELETE, elicit_token: token }), "bob with alice's token");
            assert.equal(errB.code, 'elicit_required', `bob with alice's token: ${JSON.stringify(errB)}`);
            assert.equal(errB.details?.token_rejected, 'invalid', `bob with alice's token: ${JSON.stringify(errB)}`);
            assert.match(errB.recovery?.command ?? '', /--caller bob(\s|$)/, JSON.stringify(errB.recovery));
            assert.ok(!JSON.stringify(errB).includes('alice'), `bob's refusal names alice: ${JSON.stringify(errB)}`);
            assert.equal(existsSync(v.target), true, "bob's call with alice's token deleted the note");

            success(await call(a, 'delete_note', { ...DELETE, elicit_token: token }), 'alice with her token');
            assert.equal(existsSync(v.target), false, "alice's approved delete did not run");
        });
    }

    it('2026-07-28: B cannot complete the round trip with the requestState raised for A', { timeout: TEST_TIMEOUT }, async () => {
        // r[verify auth.isolation]
        // r[verify approval.bound]
        // r[verify trip.modern.resubmit]
        const v = makeVault();
        writeConfig(v, { jwt: true });
        const [tokA, tokB] = [await mintJwt(v, 'alice'), await mintJwt(v, 'bob')];
        const http = await startHttp(v);
        const approve = { action: 'accept', content: { approve: true } };
        const a = await connect(v, { transport: http, era: MODERN, bearer: tokA, answer: approve, manual: true });
        const b = await connect(v, { transport: http, era: MODERN, bearer: tokB, answer: approve, manual: true });

        const raised = await call(a, 'delete_note', DELETE, { allowInputRequired: true });
        assert.equal(raised.resultType, 'input_required', `alice's gated call: ${JSON.stringify(raised)}`);
        assert.ok(raised.inputRequests?.confirm, `no inputRequests.confirm: ${JSON.stringify(raised)}`);
        assert.equal(typeof raised.requestState, 'string', `no requestState: ${JSON.stringify(raised)}`);

        const stolen = await bounded(
            b.client.callTool(
                { name: 'delete_note', arguments: { ...DELETE }, inputResponses: { confirm: approve }, requestState: raised.requestState },
                { timeout: CALL_TIMEOUT_MS, allowInputRequired: true }
            ),
            CALL_TIMEOUT_MS + 2_000,
            "bob resubmitting alice's requestState"
        ).catch((e) => ({ thrown: String(e) }));
        // Bob must not get his delete through on alice's state: either a refusal, a fresh
        // prompt of his own, or a protocol error — never success.
        assert.ok(
            stolen.thrown || stolen.isError || (stolen.resultType === 'input_required' && stolen.requestState !== raised.requestState),
            `bob completed alice's round trip: ${JSON.stringify(stolen)}`
        );
        assert.equal(existsSync(v.target), true, "bob's replay of alice's requestState deleted the note");
    });
});

describe('read_notes paging (TS)', () => {
    it('walks every note by following next_cursor, each page under the cap', { timeout: TEST_TIMEOUT }, async () => {
        // r[verify paging.read-notes.repeat]
        // r[verify paging.read-notes.no-overflow]
        // r[verify paging.progress]
        // r[verify paging.read-notes.shape]
        // The smallest cap the config accepts (config.governor.minimum), and notes big enough
        // that the walk takes several pages under it.
        const v = makeVault({ notes: 12, noteLines: 250 });
        const cap = 131_072;
        writeConfig(v, { maxResponseBytes: cap });
        const c = await connect(v, { transport: 'stdio', era: 'legacy' });
        const seen = [];
        let cursor;
        let pages = 0;
        for (;;) {
            const args = { folder: 'notes', ...(cursor ? { cursor } : {}) };
            const result = await call(c, 'read_notes', args);
            const page = success(result, `read_notes page ${pages + 1}`);
            pages += 1;
            assert.ok(JSON.stringify(result.structuredContent).length <= cap, `page ${pages} is over the cap`);
            assert.ok(Array.isArray(page.notes) && Array.isArray(page.errors), `page shape: ${JSON.stringify(page)}`);
            assert.deepEqual(page.errors, [], `page ${pages} errors: ${JSON.stringify(page.errors)}`);
            assert.ok(page.notes.length > 0 || page.next_cursor === null, `page ${pages} made no progress`);
            for (const note of page.notes) {
                assert.equal(typeof note.content, 'string');
                assert.equal(typeof note.content_hash, 'string');
                seen.push(note.path);
            }
            if (page.next_cursor === null) break;
            assert.equal(typeof page.next_cursor, 'string', `next_cursor: ${JSON.stringify(page.next_cursor)}`);
            cursor = page.next_cursor;
            assert.ok(pages < 50, 'the walk does not end');
        }
        assert.ok(pages > 1, `expected several pages under a ${cap}-byte cap, got ${pages}`);
        const expected = Array.from({ length: 12 }, (_, i) => `notes/note-${String(i + 1).padStart(2, '0')}.md`);
        assert.deepEqual([...seen].sort(), expected, 'the walk did not return every note exactly once');
    });
});

describe('read_notes cursor across JWT callers (TS)', () => {
    it("B's replay of A's cursor is invalid_input foreign; A's own walk continues", { timeout: TEST_TIMEOUT }, async () => {
        // r[verify paging.cursor.bound]
        // r[verify paging.cursor.refusals]
        // r[verify results.invalid-input]
        // r[verify auth.isolation]
        const v = makeVault({ notes: 8, noteLines: 250 });
        writeConfig(v, { jwt: true, maxResponseBytes: 131_072 });
        const [tokA, tokB] = [await mintJwt(v, 'alice'), await mintJwt(v, 'bob')];
        const http = await startHttp(v);
        const a = await connect(v, { transport: http, era: MODERN, bearer: tokA });
        const b = await connect(v, { transport: http, era: MODERN, bearer: tokB });
        const first = success(await call(a, 'read_notes', { folder: 'notes' }), "alice's first page");
        assert.equal(typeof first.next_cursor, 'string', `expected a next_cursor: ${JSON.stringify(first)}`);
        const err = failure(await call(b, 'read_notes', { folder: 'notes', cursor: first.next_cursor }), "bob with alice's cursor");
        assert.equal(err.code, 'invalid_input', `bob with alice's cursor: ${JSON.stringify(err)}`);
        assert.equal(err.details?.reason, 'foreign', `bob with alice's cursor: ${JSON.stringify(err)}`);
        const mismatch = failure(await call(a, 'read_notes', { folder: 'inbox', cursor: first.next_cursor }), 'cursor on another request');
        assert.equal(mismatch.code, 'invalid_input', JSON.stringify(mismatch));
        assert.equal(mismatch.details?.reason, 'request_mismatch', JSON.stringify(mismatch));
        success(await call(a, 'read_notes', { folder: 'notes', cursor: first.next_cursor }), "alice's second page");
    });
});
