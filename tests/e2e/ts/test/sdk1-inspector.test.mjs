// The clients most people still run: the TypeScript SDK 1.x (`@modelcontextprotocol/sdk`,
// under most MCP clients) and the Inspector CLI built on it. Both validate a result's
// structuredContent against the tool's success outputSchema and reject the whole result when
// it does not match, so a refusal must reach them as text only (spec results.error-blocks),
// and the text alone must carry the approval command (results.error-text.actionable).

import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, dirname } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { BIN, CALL_TIMEOUT_MS, bounded, cleanup, makeVault, failure, success, runElicit } from './harness.mjs';

const require = createRequire(import.meta.url);
const INSPECTOR = join(dirname(require.resolve('@modelcontextprotocol/inspector-cli/package.json')), 'build', 'cli.js');
const TEST_TIMEOUT = 60_000;

afterEach(cleanup);

async function connectSdk1(v) {
    const transport = new StdioClientTransport({
        command: BIN,
        args: ['serve', v.vault, '--cache-dir', v.cache],
        stderr: 'pipe',
    });
    const client = new Client({ name: 'e2e-sdk1', version: '0.0.0' }, { capabilities: {} });
    await bounded(client.connect(transport), 15_000, 'connect (SDK 1.x)');
    return client;
}

/** The Inspector CLI against the binary over stdio; resolves {code, stdout, stderr}. */
function inspector(v, args) {
    return new Promise((resolve, reject) => {
        execFile(
            process.execPath,
            [INSPECTOR, '--cli', BIN, 'serve', v.vault, '--cache-dir', v.cache, ...args],
            // The CLI looks for its own package.json relative to the working directory.
            { timeout: 30_000, encoding: 'utf8', cwd: dirname(INSPECTOR) },
            (error, stdout, stderr) => {
                if (error && typeof error.code !== 'number') {
                    reject(new Error(`the Inspector CLI failed to run: ${error.message}\n${stderr}`));
                    return;
                }
                resolve({ code: error ? error.code : 0, stdout, stderr });
            }
        );
    });
}

describe('TypeScript SDK 1.x and the Inspector CLI', () => {
    it('SDK 1.x reads a refusal, the human approves with the printed command, the retry runs', { timeout: TEST_TIMEOUT }, async () => {
        // r[verify results.error-blocks]
        // r[verify results.error-text.actionable]
        const v = makeVault();
        const client = await connectSdk1(v);
        try {
            // listTools fills the SDK's outputSchema cache, so callTool validates from here on.
            await bounded(client.listTools(), CALL_TIMEOUT_MS, 'tools/list');
            const args = { path: 'inbox/delete-me.md' };
            let refused;
            try {
                refused = await bounded(client.callTool({ name: 'delete_note', arguments: args }), CALL_TIMEOUT_MS, 'delete_note');
            } catch (e) {
                assert.fail(`SDK 1.x threw on the refusal instead of returning it: ${e.message}`);
            }
            const err = failure(refused, 'SDK 1.x delete_note');
            assert.equal(err.code, 'elicit_required');
            assert.ok(existsSync(v.target), 'nothing was deleted');
            const minted = await runElicit(v, err);
            assert.equal(minted.code, 0, `the printed command failed: ${minted.stderr}`);
            const token = minted.stdout.trim();
            const done = await bounded(
                client.callTool({ name: 'delete_note', arguments: { ...args, elicit_token: token } }),
                CALL_TIMEOUT_MS,
                'delete_note with the token'
            );
            success(done, 'SDK 1.x delete_note approved');
            assert.ok(!existsSync(v.target), 'the approved delete ran');
        } finally {
            await client.close();
        }
    });

    it('SDK 1.x lists every tool and drives the daily-driver families: tags, backlinks, one approval for a bulk edit', { timeout: TEST_TIMEOUT }, async () => {
        // r[verify tools.schema.objects]
        // r[verify bulk.dry-run.free]
        const v = makeVault();
        mkdirSync(join(v.vault, 'projects'), { recursive: true });
        for (const n of ['a', 'b', 'c']) {
            writeFileSync(join(v.vault, 'projects', `${n}.md`), `---\n# owner: me\nstatus: todo\ntags: [project/alpha]\n---\n# ${n}\n`);
        }
        writeFileSync(join(v.vault, 'Home.md'), '- [[a]]\n- [B](projects/b.md)\n');
        const client = await connectSdk1(v);
        try {
            // SDK 1.x refuses a whole tools/list holding a field schema it cannot read.
            const { tools } = await bounded(client.listTools(), CALL_TIMEOUT_MS, 'tools/list');
            for (const name of ['list_tags', 'get_backlinks', 'bulk_set_property', 'bulk_move_notes', 'list_snapshots']) {
                assert.ok(tools.some((t) => t.name === name), `${name} is listed`);
            }
            const tags = success(await client.callTool({ name: 'find_notes_by_tag', arguments: { tag: 'project' } }), 'find_notes_by_tag');
            assert.equal(JSON.stringify(tags).includes('projects/c.md'), true, JSON.stringify(tags));
            const back = success(await client.callTool({ name: 'get_backlinks', arguments: { path: 'projects/b.md' } }), 'get_backlinks');
            assert.ok(JSON.stringify(back).includes('Home.md'), JSON.stringify(back));
            const args = { folder: 'projects', key: 'status', value: 'done' };
            const plan = success(await client.callTool({ name: 'bulk_set_property', arguments: { ...args, dry_run: true } }), 'dry run');
            assert.equal(plan.changed, 3);
            const err = failure(await client.callTool({ name: 'bulk_set_property', arguments: args }), 'bulk_set_property');
            assert.equal(err.code, 'elicit_required');
            const minted = await runElicit(v, err);
            assert.equal(minted.code, 0, `the printed command failed: ${minted.stderr}`);
            const done = success(
                await client.callTool({ name: 'bulk_set_property', arguments: { ...args, elicit_token: minted.stdout.trim() } }),
                'bulk_set_property approved'
            );
            assert.equal(done.changed, 3);
            const b = readFileSync(join(v.vault, 'projects', 'b.md'), 'utf8');
            assert.equal(b, '---\n# owner: me\nstatus: done\ntags: [project/alpha]\n---\n# b\n', 'only the key\'s line changed');
        } finally {
            await client.close();
        }
    });

    it('the Inspector CLI shows a refusal and exits 0', { timeout: TEST_TIMEOUT }, async () => {
        // r[verify results.error-blocks]
        const v = makeVault();
        const listed = await inspector(v, ['--method', 'tools/list']);
        assert.equal(listed.code, 0, `tools/list: ${listed.stderr}`);
        assert.ok(JSON.parse(listed.stdout).tools.some((t) => t.name === 'delete_note'));
        const refused = await inspector(v, ['--method', 'tools/call', '--tool-name', 'delete_note', '--tool-arg', 'path=inbox/delete-me.md']);
        assert.equal(refused.code, 0, `the Inspector CLI failed on a refusal: ${refused.stderr}`);
        const result = JSON.parse(refused.stdout);
        const err = failure(result, 'Inspector CLI delete_note');
        assert.equal(err.code, 'elicit_required');
        assert.ok(existsSync(v.target));
    });
});
