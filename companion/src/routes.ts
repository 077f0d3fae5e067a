// The companion's routes under /obsidian-tc/v1/ on the Local REST API (spec/bridge.md
// companion.routes, companion.probe, companion.quickadd, companion.timeout; the Templater
// route in templater.ts).
//
// Kept free of the `obsidian` module so it runs under node's test runner against a
// stand-in of the app object and of the Local REST API's extension API. The routes are
// added with the extension API's `addRoute`, so the Local REST API checks the API key on
// them exactly as on its own routes.

import { type TemplaterApp, templater, templaterHandler } from "./templater";

export { parseTemplater, templater, templaterHandler } from "./templater";

export const PREFIX = "/obsidian-tc/v1";
export const LOCAL_REST_API_ID = "obsidian-local-rest-api";
export const QUICKADD_ID = "quickadd";

/** The smallest and largest wait for a QuickAdd choice a caller may ask for. */
export const MIN_TIMEOUT_MS = 1;
export const MAX_TIMEOUT_MS = 600_000;
/** The wait when the caller names none. */
export const DEFAULT_TIMEOUT_MS = 4_000;

/** The part of an Express response the routes use. */
export interface Res {
  status(code: number): Res;
  json(body: unknown): unknown;
}

/** The part of an Express request the routes use. */
export interface Req {
  body?: unknown;
}

export type Handler = (req: Req, res: Res) => unknown;

/** What `addRoute(path)` returns (an Express `IRoute`), as far as the routes use it. */
export interface Route {
  get(handler: Handler): Route;
  post(handler: Handler): Route;
}

/** The Local REST API's public extension API (its `publicApi.ts`), as far as used here. */
export interface LocalRestApi {
  addRoute(path: string): Route;
  unregister(): void;
}

interface QuickAddApi {
  executeChoice(choice: string, variables?: Record<string, unknown>): Promise<unknown>;
}

interface Choice {
  name?: unknown;
  choices?: unknown;
}

/** The part of Obsidian's `App` the routes read: the loaded plugins. */
export interface AppLike {
  plugins?: {
    plugins?: Record<string, unknown>;
  };
}

/** The manifest the companion presents to the Local REST API. */
export interface ManifestLike {
  id: string;
  version: string;
}

/** The Local REST API's extension API, or undefined when it is not loaded (as its own
 * `getAPI(app, manifest)` resolves it). */
export function getLocalRestApi(app: AppLike, manifest: ManifestLike): LocalRestApi | undefined {
  const plugin = app.plugins?.plugins?.[LOCAL_REST_API_ID] as
    | { getPublicApi?: (manifest: ManifestLike) => LocalRestApi }
    | undefined;
  if (!plugin || typeof plugin.getPublicApi !== "function") return undefined;
  return plugin.getPublicApi(manifest);
}

function quickAdd(app: AppLike): { api: QuickAddApi; choices: unknown } | undefined {
  const plugin = app.plugins?.plugins?.[QUICKADD_ID] as
    | { api?: QuickAddApi; settings?: { choices?: unknown } }
    | undefined;
  if (!plugin?.api || typeof plugin.api.executeChoice !== "function") return undefined;
  return { api: plugin.api, choices: plugin.settings?.choices };
}

/** Whether QuickAdd's settings list a choice named `name` (Multi choices nest theirs);
 * undefined when the settings cannot be read, so the choice is not judged. */
export function hasChoice(choices: unknown, name: string): boolean | undefined {
  if (!Array.isArray(choices)) return undefined;
  const walk = (list: unknown[]): boolean =>
    list.some((item) => {
      const choice = item as Choice;
      if (choice?.name === name) return true;
      return Array.isArray(choice?.choices) && walk(choice.choices);
    });
  return walk(choices);
}

/** The capabilities the probe reports now. */
export function capabilities(app: AppLike): string[] {
  const caps = ["probe"];
  if (quickAdd(app)) caps.push("quickadd");
  // r[impl companion.probe.templater]
  if (templater(app as TemplaterApp)) caps.push("templater");
  return caps;
}

function fail(res: Res, status: number, code: string, message: string): unknown {
  return res.status(status).json({ ok: false, code, message });
}

/** The request body as an object: the Local REST API may hand it over parsed (JSON body
 * parser) or as text or bytes. */
export function bodyObject(body: unknown): Record<string, unknown> | undefined {
  let value = body;
  if (typeof value === "string" || value instanceof Uint8Array) {
    const text = typeof value === "string" ? value : new TextDecoder().decode(value);
    try {
      value = JSON.parse(text);
    } catch {
      return undefined;
    }
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  return value as Record<string, unknown>;
}

export interface TriggerRequest {
  choice: string;
  variables: Record<string, unknown>;
  timeoutMs: number;
}

/** The trigger's request, or the sentence saying what is wrong with it. */
export function parseTrigger(body: unknown): TriggerRequest | string {
  const object = bodyObject(body);
  if (!object) return "the body must be a JSON object {choice, variables, timeoutMs}";
  const { choice, variables, timeoutMs } = object;
  if (typeof choice !== "string" || choice.trim() === "") {
    return "choice must be the non-empty name of a QuickAdd choice";
  }
  if (
    variables !== undefined &&
    (variables === null || typeof variables !== "object" || Array.isArray(variables))
  ) {
    return "variables must be an object";
  }
  if (
    timeoutMs !== undefined &&
    (typeof timeoutMs !== "number" ||
      !Number.isInteger(timeoutMs) ||
      timeoutMs < MIN_TIMEOUT_MS ||
      timeoutMs > MAX_TIMEOUT_MS)
  ) {
    return `timeoutMs must be an integer between ${MIN_TIMEOUT_MS} and ${MAX_TIMEOUT_MS}`;
  }
  return {
    choice,
    variables: (variables as Record<string, unknown> | undefined) ?? {},
    timeoutMs: (timeoutMs as number | undefined) ?? DEFAULT_TIMEOUT_MS,
  };
}

const TIMED_OUT = Symbol("timed out");

/** `GET /obsidian-tc/v1/probe`. */
export function probeHandler(app: AppLike, version: string): Handler {
  return (_req, res) =>
    res.status(200).json({
      ok: true,
      name: "obsidian-tc-companion",
      version,
      capabilities: capabilities(app),
    });
}

/** `POST /obsidian-tc/v1/quickadd/trigger`: runs the choice once, within its timeout. */
export function triggerHandler(app: AppLike): Handler {
  return async (req, res) => {
    const parsed = parseTrigger(req.body);
    if (typeof parsed === "string") return fail(res, 400, "invalid_request", parsed);
    const quickadd = quickAdd(app);
    if (!quickadd) {
      return fail(res, 424, "quickadd_unavailable", "the QuickAdd plugin is not enabled in this vault");
    }
    if (hasChoice(quickadd.choices, parsed.choice) === false) {
      return fail(res, 404, "choice_not_found", `QuickAdd has no choice named ${JSON.stringify(parsed.choice)}`);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
      timer = setTimeout(() => resolve(TIMED_OUT), parsed.timeoutMs);
    });
    try {
      // Started exactly once; a late finish after the timeout is not waited for, and
      // nothing here starts it again.
      const outcome = await Promise.race([
        quickadd.api.executeChoice(parsed.choice, parsed.variables),
        timeout,
      ]);
      if (outcome === TIMED_OUT) {
        return fail(
          res,
          504,
          "operation_timeout",
          `QuickAdd did not finish ${JSON.stringify(parsed.choice)} within ${parsed.timeoutMs} ms; it may still be running`,
        );
      }
      return res.status(200).json({ ok: true, result: outcome === undefined ? null : outcome });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return fail(res, 500, "choice_failed", message);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
  };
}

/** Adds the companion's routes through the extension API. */
export function registerRoutes(api: LocalRestApi, app: AppLike, version: string): void {
  api.addRoute(`${PREFIX}/probe`).get(probeHandler(app, version));
  api.addRoute(`${PREFIX}/quickadd/trigger`).post(triggerHandler(app));
  api.addRoute(`${PREFIX}/templater/execute`).post(templaterHandler(app as TemplaterApp));
}
