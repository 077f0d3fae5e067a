// The obsidian-tc companion plugin: adds the routes of routes.ts to the Local REST API
// once it is loaded, and takes them away when unloaded (spec/bridge.md companion.routes).

import { Plugin } from "obsidian";

import { type AppLike, type LocalRestApi, getLocalRestApi, registerRoutes } from "./routes";

export default class ObsidianTcCompanion extends Plugin {
  private api: LocalRestApi | undefined;

  async onload(): Promise<void> {
    // The Local REST API may load before or after this plugin: attach now if it is there,
    // and again when it announces itself (its documented workspace event).
    this.app.workspace.onLayoutReady(() => this.attach());
    this.registerEvent(
      // The event is the Local REST API's own, not in Obsidian's typings.
      (this.app.workspace as unknown as {
        on(name: string, callback: () => void): ReturnType<Plugin["app"]["workspace"]["on"]>;
      }).on("obsidian-local-rest-api:loaded", () => this.attach()),
    );
  }

  onunload(): void {
    this.api?.unregister();
    this.api = undefined;
  }

  private attach(): void {
    const api = getLocalRestApi(this.app as unknown as AppLike, this.manifest);
    if (!api || api === this.api) return;
    this.api?.unregister();
    registerRoutes(api, this.app as unknown as AppLike, this.manifest.version);
    this.api = api;
  }
}
