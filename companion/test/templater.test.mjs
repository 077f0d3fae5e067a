// The companion's Templater route against stand-ins of Obsidian's app (its vault and
// loaded plugins), of Templater's object and of the Local REST API's extension API
// (spec/bridge.md companion.templater, companion.templater.timeout,
// companion.probe.templater).

import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

import { fakeApp, fakeLocalRestApi } from "./standin.mjs";

const require = createRequire(import.meta.url);
const routes = require("../build/routes.cjs");

const manifest = { id: "obsidian-tc-companion", version: "0.1.0" };
const ROUTE = "/obsidian-tc/v1/templater/execute";

/** Templater's object, recording what it is asked to do; `files` is the vault. */
function fakeTemplater(files, { slow, throws, makesNothing } = {}) {
  const calls = [];
  return {
    calls,
    templater: {
      async write_template_to_file(template, file) {
        calls.push(["write", template.path, file.path]);
        if (throws) throw new Error(throws);
        if (slow) await slow;
        files.set(file.path, files.get(template.path));
      },
      async create_new_note_from_template(template, folder, filename, open) {
        calls.push(["create", template.path, folder, filename, open]);
        if (throws) throw new Error(throws);
        if (slow) await slow;
        if (makesNothing) return undefined;
        const path = folder ? `${folder}/${filename}.md` : `${filename}.md`;
        files.set(path, files.get(template.path));
        return { path, extension: "md" };
      },
    },
  };
}

function setup({ templater = true, options = {} } = {}) {
  const files = new Map([
    ["Templates/Daily.md", "# <% tp.date.now() %>\n"],
    ["notes/old.md", "old\n"],
  ]);
  const plugin = templater ? fakeTemplater(files, options) : undefined;
  const restApi = fakeLocalRestApi();
  const plugins = { "obsidian-local-rest-api": { getPublicApi: () => restApi } };
  if (plugin) plugins["templater-obsidian"] = plugin;
  const app = fakeApp(plugins);
  app.vault = {
    getAbstractFileByPath(path) {
      if (files.has(path)) return { path, extension: "md" };
      // A folder: no extension.
      if ([...files.keys()].some((p) => p.startsWith(`${path}/`))) return { path, children: [] };
      return null;
    },
  };
  routes.registerRoutes(routes.getLocalRestApi(app, manifest), app, manifest.version);
  return { restApi, files, plugin, app };
}

// r[verify companion.templater]
test("a new target is created from the template, an existing one overwritten", async () => {
  const { restApi, files, plugin } = setup();
  const res = await restApi.call("post", ROUTE, {
    template: "Templates/Daily.md",
    target: "daily/2026-03-01.md",
    timeoutMs: 1000,
  });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.body, { ok: true, path: "daily/2026-03-01.md", created: true });
  assert.deepEqual(plugin.calls, [["create", "Templates/Daily.md", "daily", "2026-03-01", false]]);
  assert.equal(files.get("daily/2026-03-01.md"), "# <% tp.date.now() %>\n");
  const res2 = await restApi.call(
    "post",
    ROUTE,
    JSON.stringify({ template: "Templates/Daily.md", target: "notes/old.md" }),
  );
  assert.deepEqual(res2.body, { ok: true, path: "notes/old.md", created: false });
  assert.deepEqual(plugin.calls[1], ["write", "Templates/Daily.md", "notes/old.md"]);
  // At the vault's root.
  const res3 = await restApi.call("post", ROUTE, { template: "Templates/Daily.md", target: "top.md" });
  assert.equal(res3.body.path, "top.md");
  assert.deepEqual(plugin.calls[2], ["create", "Templates/Daily.md", "", "top", false]);
});

test("what cannot run is refused and nothing runs", async () => {
  const { restApi, plugin } = setup();
  for (const [body, status, code] of [
    [{ template: "Templates/None.md", target: "a.md" }, 404, "template_not_found"],
    [{ template: "Templates", target: "a.md" }, 404, "template_not_found"],
    [{ template: "", target: "a.md" }, 400, "invalid_request"],
    [{ template: "Templates/Daily.md", target: "a.txt" }, 400, "invalid_request"],
    [{ template: "Templates/Daily.md" }, 400, "invalid_request"],
    [{ template: "Templates/Daily.md", target: "a.md", timeoutMs: 0 }, 400, "invalid_request"],
    ["not json", 400, "invalid_request"],
  ]) {
    const res = await restApi.call("post", ROUTE, body);
    assert.equal(res.statusCode, status, JSON.stringify(body));
    assert.equal(res.body.ok, false);
    assert.equal(res.body.code, code);
    assert.equal(typeof res.body.message, "string");
  }
  assert.equal(plugin.calls.length, 0);
  const without = setup({ templater: false });
  const res = await without.restApi.call("post", ROUTE, { template: "Templates/Daily.md", target: "a.md" });
  assert.equal(res.statusCode, 424);
  assert.equal(res.body.code, "templater_unavailable");
});

// r[verify companion.templater.timeout]
test("a slow template is operation_timeout and not started again; a failure is template_failed", async () => {
  let finish;
  const slow = new Promise((resolve) => (finish = resolve));
  const { restApi, plugin } = setup({ options: { slow } });
  const res = await restApi.call("post", ROUTE, { template: "Templates/Daily.md", target: "a.md", timeoutMs: 50 });
  assert.equal(res.statusCode, 504);
  assert.equal(res.body.code, "operation_timeout");
  finish();
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(plugin.calls.length, 1, "started exactly once");
  const failing = setup({ options: { throws: "bad template" } });
  const res2 = await failing.restApi.call("post", ROUTE, { template: "Templates/Daily.md", target: "a.md" });
  assert.equal(res2.statusCode, 500);
  assert.deepEqual(res2.body, { ok: false, code: "template_failed", message: "bad template" });
  const nothing = setup({ options: { makesNothing: true } });
  const res3 = await nothing.restApi.call("post", ROUTE, { template: "Templates/Daily.md", target: "a.md" });
  assert.equal(res3.statusCode, 500);
  assert.equal(res3.body.code, "template_failed");
});

// r[verify companion.probe.templater]
test("the probe lists templater when Templater's object is there", async () => {
  const { restApi } = setup();
  const res = await restApi.call("get", "/obsidian-tc/v1/probe");
  assert.ok(res.body.capabilities.includes("templater"));
  const without = setup({ templater: false });
  const res2 = await without.restApi.call("get", "/obsidian-tc/v1/probe");
  assert.ok(!res2.body.capabilities.includes("templater"));
});
