// The companion's routes against stand-ins of Obsidian's app object and of the Local REST
// API's extension API (spec/bridge.md companion.*).

import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

import { fakeApp, fakeLocalRestApi, fakeQuickAdd } from "./standin.mjs";

const require = createRequire(import.meta.url);
const routes = require("../build/routes.cjs");

const manifest = { id: "obsidian-tc-companion", version: "0.1.0" };

function setup(quickadd = fakeQuickAdd()) {
  const restApi = fakeLocalRestApi();
  const plugins = { "obsidian-local-rest-api": { getPublicApi: (m) => (restApi.manifest = m, restApi) } };
  if (quickadd) plugins.quickadd = quickadd;
  const app = fakeApp(plugins);
  const api = routes.getLocalRestApi(app, manifest);
  routes.registerRoutes(api, app, manifest.version);
  return { app, restApi, quickadd };
}

// r[verify companion.routes]
test("the routes are added through the extension API under /obsidian-tc/v1/", () => {
  const { restApi } = setup();
  assert.equal(restApi.manifest, manifest, "the companion presents its manifest");
  assert.deepEqual([...restApi.routes.keys()].sort(), [
    "/obsidian-tc/v1/probe",
    "/obsidian-tc/v1/quickadd/trigger",
    "/obsidian-tc/v1/templater/execute",
  ]);
  assert.ok(restApi.routes.get("/obsidian-tc/v1/probe").get);
  assert.ok(restApi.routes.get("/obsidian-tc/v1/quickadd/trigger").post);
  restApi.unregister();
  assert.equal(restApi.routes.size, 0);
  // No Local REST API loaded: nothing to attach to.
  assert.equal(routes.getLocalRestApi(fakeApp({}), manifest), undefined);
  assert.equal(routes.getLocalRestApi({}, manifest), undefined);
});

// r[verify companion.probe]
test("the probe answers the version and what is available", async () => {
  const { restApi } = setup();
  const res = await restApi.call("get", "/obsidian-tc/v1/probe");
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.body, {
    ok: true,
    name: "obsidian-tc-companion",
    version: "0.1.0",
    capabilities: ["probe", "quickadd"],
  });
  const without = setup(null);
  const res2 = await without.restApi.call("get", "/obsidian-tc/v1/probe");
  assert.deepEqual(res2.body.capabilities, ["probe"]);
});

// r[verify companion.quickadd]
test("a trigger runs the choice once with its variables", async () => {
  const { restApi, quickadd } = setup(
    fakeQuickAdd({
      choices: [{ name: "Menu", type: "Multi", choices: [{ name: "Daily log" }] }],
      run: (choice) => ({ created: `${choice}.md` }),
    }),
  );
  const res = await restApi.call("post", "/obsidian-tc/v1/quickadd/trigger", {
    choice: "Daily log",
    variables: { mood: "fine" },
    timeoutMs: 1000,
  });
  assert.equal(res.statusCode, 200);
  assert.deepEqual(res.body, { ok: true, result: { created: "Daily log.md" } });
  assert.deepEqual(quickadd.runs, [{ choice: "Daily log", variables: { mood: "fine" } }]);
  // A body handed over as text is parsed the same way; a choice returning nothing is null.
  const { restApi: api2 } = setup();
  const res2 = await api2.call(
    "post",
    "/obsidian-tc/v1/quickadd/trigger",
    JSON.stringify({ choice: "Daily log" }),
  );
  assert.deepEqual(res2.body, { ok: true, result: null });
});

test("what cannot run is refused and nothing runs", async () => {
  const { restApi, quickadd } = setup();
  for (const [body, status, code] of [
    [{ choice: "No such" }, 404, "choice_not_found"],
    [{ choice: "" }, 400, "invalid_request"],
    [{ choice: "Daily log", variables: [1] }, 400, "invalid_request"],
    [{ choice: "Daily log", timeoutMs: 0 }, 400, "invalid_request"],
    ["not json", 400, "invalid_request"],
    [[], 400, "invalid_request"],
  ]) {
    const res = await restApi.call("post", "/obsidian-tc/v1/quickadd/trigger", body);
    assert.equal(res.statusCode, status, JSON.stringify(body));
    assert.equal(res.body.ok, false);
    assert.equal(res.body.code, code);
    assert.equal(typeof res.body.message, "string");
  }
  assert.equal(quickadd.runs.length, 0);
  const without = setup(null);
  const res = await without.restApi.call("post", "/obsidian-tc/v1/quickadd/trigger", { choice: "Daily log" });
  assert.equal(res.statusCode, 424);
  assert.equal(res.body.code, "quickadd_unavailable");
});

// r[verify companion.timeout]
test("a slow choice is answered operation_timeout and is not started again", async () => {
  let finish;
  const { restApi, quickadd } = setup(
    fakeQuickAdd({ run: () => new Promise((resolve) => (finish = resolve)) }),
  );
  const started = Date.now();
  const res = await restApi.call("post", "/obsidian-tc/v1/quickadd/trigger", {
    choice: "Daily log",
    timeoutMs: 50,
  });
  assert.ok(Date.now() - started < 2000);
  assert.equal(res.statusCode, 504);
  assert.equal(res.body.code, "operation_timeout");
  finish("late");
  await new Promise((resolve) => setTimeout(resolve, 20));
  assert.equal(quickadd.runs.length, 1, "started exactly once");
  // A choice that throws: choice_failed with its message.
  const failing = setup(
    fakeQuickAdd({
      run: () => {
        throw new Error("template missing");
      },
    }),
  );
  const res2 = await failing.restApi.call("post", "/obsidian-tc/v1/quickadd/trigger", { choice: "Daily log" });
  assert.equal(res2.statusCode, 500);
  assert.deepEqual(res2.body, { ok: false, code: "choice_failed", message: "template missing" });
});

test("choices are found in nested Multi choices, and unreadable settings do not judge", () => {
  assert.equal(routes.hasChoice([{ name: "a" }, { name: "m", choices: [{ name: "b" }] }], "b"), true);
  assert.equal(routes.hasChoice([{ name: "a" }], "b"), false);
  assert.equal(routes.hasChoice(undefined, "b"), undefined);
});
