// The lean facade through the built binary and the official TypeScript client over stdio:
// tools/list shows the three facade tools only, and call_capability is a confirmation route:
// approved by the printed `obsidian-tc elicit` command with the token next to name and args,
// and by the 2026-07-28 round trip the client completes itself.

import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { MODERN, cleanup, makeVault, connect, call, failure, success, runElicit } from './harness.mjs';

const TEST_TIMEOUT = 60_000;

function leanConfig(v) {
    const file = join(v.dir, 'obsidian-tc.toml');
    writeFileSync(
        file,
        [
            `cacheDir = ${JSON.stringify(v.cache)}`,
            '',
            '[toolFacade]',
            'mode = "lean"',
            '',
            '[[vaults]]',
            'id = "e2e"',
            `root = ${JSON.stringify(v.vault)}`,
            '',
        ].join('\n')
    );
    v.config = file;
}

describe('the lean facade', () => {
    afterEach(cleanup);

    it('lists three tools, and a printed token approves a call made through call_capability', { timeout: TEST_TIMEOUT }, async () => {
        // r[verify facade.mode.lean]
        // r[verify facade.call.token-beside]
        const v = makeVault();
        leanConfig(v);
        const c = await connect(v);
        const listed = await c.client.listTools();
        assert.deepEqual(
            listed.tools.map((t) => t.name),
            ['find_capability', 'describe_capability', 'call_capability']
        );
        const found = success(await call(c, 'find_capability', { query: 'move a note to another folder', limit: 3 }), 'find');
        assert.equal(found.capabilities[0].name, 'move_note', JSON.stringify(found));

        const args = { path: 'inbox/delete-me.md' };
        const err = failure(await call(c, 'call_capability', { name: 'delete_note', args }), 'unapproved');
        assert.equal(err.code, 'elicit_required');
        assert.equal(err.details.via, 'call_capability');
        assert.ok(existsSync(v.target), 'nothing applied before approval');
        const minted = await runElicit(v, err);
        assert.equal(minted.code, 0, minted.stderr);
        const done = success(
            await call(c, 'call_capability', { name: 'delete_note', args, elicit_token: minted.stdout.trim() }),
            'approved through the facade'
        );
        assert.equal(done.path, 'inbox/delete-me.md');
        assert.ok(!existsSync(v.target), 'the note is gone');
    });

    it('completes the 2026-07-28 round trip through call_capability', { timeout: TEST_TIMEOUT }, async () => {
        // r[verify facade.call.round-trips]
        const v = makeVault();
        leanConfig(v);
        const c = await connect(v, { era: MODERN, answer: { action: 'accept', content: { approve: true } } });
        const moved = success(
            await call(c, 'call_capability', { name: 'move_note', args: { from: 'inbox/delete-me.md', to: 'archive/kept.md' } }),
            'move through the facade'
        );
        assert.equal(moved.to, 'archive/kept.md');
        assert.equal(c.prompts.length, 1, 'the human saw one prompt');
        assert.ok(existsSync(join(v.vault, 'archive', 'kept.md')));
    });
});
