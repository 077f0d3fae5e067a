// The confirmation routes of spec/trips.md and spec/gate.md, driven through the built binary by the official
// TypeScript client: `delete_note` (always gated) on a temp vault, over stdio and Streamable
// HTTP, in the legacy era and 2026-07-28, with every client answer and with no capability.

import { describe, it, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';

import { MODERN, cleanup, makeVault, connect, startHttp, call, failure, success, runElicit } from './harness.mjs';

const TEST_TIMEOUT = 60_000;
const DELETE = { path: 'inbox/delete-me.md' };
const ORIGINAL = '# Delete me\n\nScratch note for the e2e suite.\n';

const ANSWERS = {
    accept: { action: 'accept', content: { approve: true } },
    'accept+approve:false': { action: 'accept', content: { approve: false } },
    decline: { action: 'decline' },
    cancel: { action: 'cancel' },
};

/** The routes on which a client with form elicitation gets a real round trip. */
const ROUND_TRIPS = [
    { name: 'stdio 2026-07-28', transport: 'stdio', era: MODERN },
    { name: 'http 2026-07-28', transport: 'http', era: MODERN },
    { name: 'stdio legacy + shim', transport: 'stdio', era: 'legacy', shim: true },
];

/** Routes where even a client with the capability gets the plain elicit_required error. */
const PLAIN = [
    { name: 'stdio legacy without shim', transport: 'stdio', era: 'legacy' },
    { name: 'http legacy', transport: 'http', era: 'legacy' },
    { name: 'http legacy, server started with the shim flag', transport: 'http', era: 'legacy', shim: true },
];

async function open(route, answer, elicitation) {
    const v = makeVault();
    let transport = 'stdio';
    if (route.transport === 'http') {
        transport = await startHttp(v, { extraArgs: route.shim ? ['--legacy-elicitation-shim'] : [] });
    }
    const c = await connect(v, { transport, era: route.era, answer, shim: route.transport === 'stdio' && route.shim, elicitation });
    return { v, c };
}

function assertPromptShape(prompt, where) {
    // r[verify trip.modern.shape]
    assert.ok(prompt, `${where}: no elicitation prompt reached the client`);
    const schema = prompt.requestedSchema;
    assert.equal(schema?.type, 'object', `${where}: prompt schema ${JSON.stringify(prompt)}`);
    assert.equal(schema.properties?.approve?.type, 'boolean', `${where}: no boolean approve in ${JSON.stringify(schema)}`);
    assert.ok(schema.required?.includes('approve'), `${where}: approve not required in ${JSON.stringify(schema)}`);
}

function assertElicitRequired(err, caller, where) {
    // r[verify results.elicit-required]
    assert.equal(err.code, 'elicit_required', `${where}: ${JSON.stringify(err)}`);
    assert.equal(err.retryable, false, `${where}: elicit_required must not be retryable`);
    assert.equal(err.details?.tool, 'delete_note', `${where}: details.tool ${JSON.stringify(err.details)}`);
    assert.match(err.details?.args_hash ?? '', /\S/, `${where}: no details.args_hash`);
    assert.match(err.details?.state_fp ?? '', /\S/, `${where}: no details.state_fp`);
    assert.match(err.recovery?.command ?? '', new RegExp(`--caller ${caller}(\\s|$)`), `${where}: recovery ${JSON.stringify(err.recovery)}`);
    // r[verify results.elicit-required.directive]
    assert.match(err.message, /^\W*\w*\s*(ask|stop)/i, `${where}: message does not open with a directive: ${err.message}`);
}

afterEach(cleanup);

describe('round trip answered by the client (TS)', () => {
    for (const route of ROUND_TRIPS) {
        describe(route.name, () => {
            it('accept with approve:true deletes the note, prompting once', { timeout: TEST_TIMEOUT }, async () => {
                // r[verify trip.capability]
                // r[verify trip.accept-only]
                // r[verify trip.never-twice]
                // r[verify trip.modern.transports]
                // r[verify trip.modern.resubmit]
                // r[verify trip.legacy-shim]
                // r[verify gate.sensitive.confirm]
                const { v, c } = await open(route, ANSWERS.accept);
                const where = `${route.name} accept`;
                const result = await call(c, 'delete_note', DELETE);
                success(result, `${where} (server stderr: ${c.stderr()})`);
                assert.equal(c.prompts.length, 1, `${where}: prompted ${c.prompts.length} times`);
                assertPromptShape(c.prompts[0], where);
                assert.equal(existsSync(v.target), false, `${where}: the note is still there`);
            });

            for (const name of ['accept+approve:false', 'decline']) {
                it(`${name} is a hard stop: approval_declined, note kept`, { timeout: TEST_TIMEOUT }, async () => {
                    // r[verify trip.decline]
                    // r[verify trip.decline.text]
                    // r[verify trip.decline.no-redispatch]
                    // r[verify results.approval-declined]
                    const { v, c } = await open(route, ANSWERS[name]);
                    const where = `${route.name} ${name}`;
                    const err = failure(await call(c, 'delete_note', DELETE), where);
                    assert.equal(err.code, 'approval_declined', `${where}: ${JSON.stringify(err)}`);
                    assert.equal(err.details?.reason, 'approval_declined', `${where}: ${JSON.stringify(err)}`);
                    assert.equal(err.retryable, false, `${where}: decline must not be retryable`);
                    assert.match(err.message, /declined/i, `${where}: text does not say the user declined: ${err.message}`);
                    assert.equal(c.prompts.length, 1, `${where}: prompted ${c.prompts.length} times`);
                    assert.equal(existsSync(v.target), true, `${where}: the note was deleted after a decline`);
                });
            }

            it('cancel is approval_not_obtained whose recovery command mints a working token', { timeout: TEST_TIMEOUT }, async () => {
                // r[verify trip.cancel]
                // r[verify trip.cancel.text]
                // r[verify results.approval-not-obtained]
                const { v, c } = await open(route, ANSWERS.cancel);
                const where = `${route.name} cancel`;
                const err = failure(await call(c, 'delete_note', DELETE), where);
                assert.equal(err.code, 'approval_not_obtained', `${where}: ${JSON.stringify(err)}`);
                assert.equal(err.details?.reason, 'approval_not_obtained', `${where}: ${JSON.stringify(err)}`);
                assert.equal(c.prompts.length, 1, `${where}: prompted ${c.prompts.length} times`);
                assert.equal(existsSync(v.target), true, `${where}: the note was deleted after a cancel`);
                const minted = await runElicit(v, { ...err, details: { ...err.details, tool: 'delete_note' } });
                assert.equal(minted.code, 0, `${where}: the recovery's elicit command failed: ${minted.stderr}`);
                const token = minted.stdout.trim();
                success(await call(c, 'delete_note', { ...DELETE, elicit_token: token }), `${where} then elicit_token`);
                assert.equal(existsSync(v.target), false, `${where}: the token did not let the delete run`);
                assert.equal(c.prompts.length, 1, `${where}: a call carrying a token was prompted again`);
            });

            it('a client without the elicitation capability gets elicit_required', { timeout: TEST_TIMEOUT }, async () => {
                // r[verify trip.no-capability]
                const { v, c } = await open(route, null);
                const where = `${route.name} no capability`;
                const err = failure(await call(c, 'delete_note', DELETE), where);
                assertElicitRequired(err, route.transport === 'stdio' ? 'stdio' : 'http-local', where);
                assert.equal(existsSync(v.target), true, `${where}: the note was deleted`);
            });
        });
    }
});

describe('plain elicit_required even with the capability (TS)', () => {
    for (const route of PLAIN) {
        it(route.name, { timeout: TEST_TIMEOUT }, async () => {
            // r[verify trip.legacy-plain]
            // r[verify trip.legacy-shim.opt-in]
            // r[verify trip.legacy-shim.stdio-only]
            const { v, c } = await open(route, ANSWERS.accept);
            const where = `${route.name} (capability declared)`;
            const err = failure(await call(c, 'delete_note', DELETE), where);
            assertElicitRequired(err, route.transport === 'stdio' ? 'stdio' : 'http-local', where);
            assert.equal(c.prompts.length, 0, `${where}: the client was prompted`);
            assert.equal(existsSync(v.target), true, `${where}: the note was deleted`);
        });
    }
});

describe('CLI route (TS)', () => {
    const CLI_ROUTES = [
        { name: 'stdio legacy', transport: 'stdio', era: 'legacy', caller: 'stdio' },
        { name: 'stdio 2026-07-28 without capability', transport: 'stdio', era: MODERN, caller: 'stdio' },
        { name: 'http legacy (auth none)', transport: 'http', era: 'legacy', caller: 'http-local' },
        { name: 'http 2026-07-28 without capability (auth none)', transport: 'http', era: MODERN, caller: 'http-local' },
    ];
    for (const route of CLI_ROUTES) {
        it(`${route.name}: elicit_required → obsidian-tc elicit → elicit_token succeeds once`, { timeout: TEST_TIMEOUT }, async () => {
            // r[verify gate.routes]
            // r[verify gate.token.single-use]
            // r[verify gate.token.refused]
            // r[verify cli.elicit.prints-token]
            // r[verify cli.elicit.hash]
            // r[verify auth.stdio-caller]
            // r[verify auth.none.caller]
            const { v, c } = await open(route, null);
            const where = route.name;
            const err = failure(await call(c, 'delete_note', DELETE), where);
            assertElicitRequired(err, route.caller, where);

            const minted = await runElicit(v, err);
            assert.equal(minted.code, 0, `${where}: obsidian-tc elicit failed: ${minted.stderr}`);
            assert.match(minted.stdout, /^\S+\n$/, `${where}: elicit printed more than the token: ${JSON.stringify(minted.stdout)}`);
            const token = minted.stdout.trim();

            const done = success(await call(c, 'delete_note', { ...DELETE, elicit_token: token }), `${where} with elicit_token`);
            assert.ok(done, where);
            assert.equal(existsSync(v.target), false, `${where}: the note is still there`);

            // Put the same note back so the same arguments are gated again; the spent token
            // must approve nothing.
            writeFileSync(v.target, ORIGINAL);
            const again = failure(await call(c, 'delete_note', { ...DELETE, elicit_token: token }), `${where} token replay`);
            assert.equal(again.code, 'elicit_required', `${where} replay: ${JSON.stringify(again)}`);
            assert.equal(again.details?.token_rejected, 'spent', `${where} replay: ${JSON.stringify(again)}`);
            assert.equal(existsSync(v.target), true, `${where}: a spent token deleted the note again`);
        });
    }
});

describe('declared capability shapes (TS)', () => {
    for (const route of ROUND_TRIPS) {
        it(`${route.name}: a bare elicitation: {} is form mode and gets the round trip`, { timeout: TEST_TIMEOUT }, async () => {
            // r[verify trip.bare-capability]
            const { v, c } = await open(route, ANSWERS.accept, {});
            const where = `${route.name} bare capability`;
            success(await call(c, 'delete_note', DELETE), `${where} (server stderr: ${c.stderr()})`);
            assert.equal(c.prompts.length, 1, `${where}: prompted ${c.prompts.length} times`);
            assert.equal(existsSync(v.target), false, `${where}: the note is still there`);
        });

        it(`${route.name}: url-only elicitation gets the plain elicit_required`, { timeout: TEST_TIMEOUT }, async () => {
            // r[verify trip.url-only]
            const { v, c } = await open(route, ANSWERS.accept, { url: {} });
            const where = `${route.name} url-only capability`;
            const err = failure(await call(c, 'delete_note', DELETE), where);
            assertElicitRequired(err, route.transport === 'stdio' ? 'stdio' : 'http-local', where);
            assert.equal(c.prompts.length, 0, `${where}: the client was prompted`);
            assert.equal(existsSync(v.target), true, `${where}: the note was deleted`);
        });
    }
});

describe('legacy shim prompt answered with an error (TS)', () => {
    it('is treated as cancel: approval_not_obtained, note kept', { timeout: TEST_TIMEOUT }, async () => {
        // r[verify trip.legacy-shim.no-answer]
        const route = ROUND_TRIPS.find((r) => r.shim);
        const { v, c } = await open(route, () => {
            throw new Error('this client cannot show the form');
        });
        const err = failure(await call(c, 'delete_note', DELETE), 'shim prompt answered with an error');
        assert.equal(err.code, 'approval_not_obtained', JSON.stringify(err));
        assert.equal(c.prompts.length, 1, `prompted ${c.prompts.length} times`);
        assert.equal(existsSync(v.target), true, 'the note was deleted');
    });
});
