// The companion's Templater route (spec/bridge.md companion.templater,
// companion.templater.timeout, companion.probe.templater): runs one template into one note
// through Templater's own object, `app.plugins.plugins["templater-obsidian"].templater`.
//
// An existing target is overwritten with `write_template_to_file(template, target)`; a new
// one is made with `create_new_note_from_template(template, folder, name, false)` (not
// opened). Kept free of the `obsidian` module, like routes.ts.

export const TEMPLATER_ID = "templater-obsidian";

/** The smallest and largest wait for a template a caller may ask for. */
const MIN_TIMEOUT_MS = 1;
const MAX_TIMEOUT_MS = 600_000;
const DEFAULT_TIMEOUT_MS = 4_000;

interface Res {
  status(code: number): Res;
  json(body: unknown): unknown;
}

interface Req {
  body?: unknown;
}

type Handler = (req: Req, res: Res) => unknown;

/** A file as Obsidian's vault hands it out (a `TFile` has an extension; a folder has not). */
interface FileLike {
  path: string;
  extension?: string;
}

interface TemplaterLike {
  write_template_to_file(template: FileLike, file: FileLike): Promise<unknown>;
  create_new_note_from_template(
    template: FileLike,
    folder?: string,
    filename?: string,
    open_new_note?: boolean,
  ): Promise<FileLike | undefined>;
}

/** The part of Obsidian's `App` this route reads. */
export interface TemplaterApp {
  plugins?: { plugins?: Record<string, unknown> };
  vault?: { getAbstractFileByPath(path: string): unknown };
}

/** Templater's object, when the plugin is loaded with the two functions this route calls. */
export function templater(app: TemplaterApp): TemplaterLike | undefined {
  const plugin = app.plugins?.plugins?.[TEMPLATER_ID] as { templater?: Partial<TemplaterLike> } | undefined;
  const object = plugin?.templater;
  if (
    !object ||
    typeof object.write_template_to_file !== "function" ||
    typeof object.create_new_note_from_template !== "function"
  ) {
    return undefined;
  }
  return object as TemplaterLike;
}

function fileAt(app: TemplaterApp, path: string): FileLike | undefined {
  const found = app.vault?.getAbstractFileByPath(path) as FileLike | null | undefined;
  return found && typeof found.extension === "string" ? found : undefined;
}

export interface TemplaterRequest {
  template: string;
  target: string;
  timeoutMs: number;
}

function bodyObject(body: unknown): Record<string, unknown> | undefined {
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

/** The request, or the sentence saying what is wrong with it. */
export function parseTemplater(body: unknown): TemplaterRequest | string {
  const object = bodyObject(body);
  if (!object) return "the body must be a JSON object {template, target, timeoutMs}";
  const { template, target, timeoutMs } = object;
  if (typeof template !== "string" || template.trim() === "") {
    return "template must be the vault path of a template file";
  }
  if (typeof target !== "string" || !target.endsWith(".md") || target.startsWith("/")) {
    return "target must be the vault path of a note, ending in .md";
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
  return { template, target, timeoutMs: (timeoutMs as number | undefined) ?? DEFAULT_TIMEOUT_MS };
}

function fail(res: Res, status: number, code: string, message: string): unknown {
  return res.status(status).json({ ok: false, code, message });
}

const TIMED_OUT = Symbol("timed out");

// r[impl companion.templater]
// r[impl companion.templater.timeout]
/** `POST /obsidian-tc/v1/templater/execute`: runs the template once, within its timeout. */
export function templaterHandler(app: TemplaterApp): Handler {
  return async (req, res) => {
    const parsed = parseTemplater(req.body);
    if (typeof parsed === "string") return fail(res, 400, "invalid_request", parsed);
    const api = templater(app);
    if (!api) {
      return fail(res, 424, "templater_unavailable", "the Templater plugin is not enabled in this vault");
    }
    const template = fileAt(app, parsed.template);
    if (!template) {
      return fail(res, 404, "template_not_found", `the vault has no file ${JSON.stringify(parsed.template)}`);
    }
    const existing = fileAt(app, parsed.target);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
      timer = setTimeout(() => resolve(TIMED_OUT), parsed.timeoutMs);
    });
    try {
      // Started exactly once; a late finish after the timeout is not waited for.
      let run: Promise<FileLike | undefined>;
      if (existing) {
        run = api.write_template_to_file(template, existing).then(() => existing);
      } else {
        const cut = parsed.target.lastIndexOf("/");
        const folder = cut < 0 ? "" : parsed.target.slice(0, cut);
        const name = parsed.target.slice(cut + 1, -".md".length);
        run = api.create_new_note_from_template(template, folder, name, false);
      }
      const outcome = await Promise.race([run, timeout]);
      if (outcome === TIMED_OUT) {
        return fail(
          res,
          504,
          "operation_timeout",
          `Templater did not finish ${JSON.stringify(parsed.template)} within ${parsed.timeoutMs} ms; it may still be running`,
        );
      }
      if (!outcome) {
        return fail(res, 500, "template_failed", "Templater made no note (see Obsidian's console)");
      }
      return res.status(200).json({ ok: true, path: outcome.path, created: !existing });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      return fail(res, 500, "template_failed", message);
    } finally {
      if (timer !== undefined) clearTimeout(timer);
    }
  };
}
