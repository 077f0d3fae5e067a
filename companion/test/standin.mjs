// Stand-ins for the tests: Obsidian's app object (its loaded plugins), the Local REST API's
// extension API (routes recorded, reached the way Express would), QuickAdd's API, and an
// Express response.

export function fakeResponse() {
  const res = {
    statusCode: undefined,
    body: undefined,
    status(code) {
      res.statusCode = code;
      return res;
    },
    json(body) {
      res.body = body;
      return res;
    },
  };
  return res;
}

/** The Local REST API's public extension API, recording what is added through it. */
export function fakeLocalRestApi() {
  const routes = new Map();
  const api = {
    unregistered: 0,
    routes,
    addRoute(path) {
      const methods = {};
      routes.set(path, methods);
      const route = {
        get(handler) {
          methods.get = handler;
          return route;
        },
        post(handler) {
          methods.post = handler;
          return route;
        },
      };
      return route;
    },
    unregister() {
      api.unregistered += 1;
      routes.clear();
    },
    /** Calls a route as the Local REST API would once the key was accepted. */
    async call(method, path, body) {
      const handler = routes.get(path)?.[method];
      if (!handler) throw new Error(`no ${method} ${path}`);
      const res = fakeResponse();
      await handler({ body }, res);
      return res;
    },
  };
  return api;
}

/** QuickAdd's plugin object: its API and settings, with the runs it was asked for. */
export function fakeQuickAdd({ choices, run } = {}) {
  const runs = [];
  return {
    runs,
    settings: { choices: choices ?? [{ name: "Daily log", type: "Capture" }] },
    api: {
      async executeChoice(choice, variables) {
        runs.push({ choice, variables });
        return run ? run(choice, variables) : undefined;
      },
    },
  };
}

/** Obsidian's app with these plugins loaded. */
export function fakeApp(plugins) {
  return { plugins: { plugins } };
}
