// mcpkit inspect as an MCP Apps host (io.modelcontextprotocol/ui): a tool whose _meta.ui.resourceUri
// names a ui:// app is rendered in a sandboxed iframe (opaque origin, the CSP its resource asks for,
// no referrer), and the app's JSON-RPC over postMessage is relayed: tools/call and resources/read
// through the inspector's API (each in the history, "from": "app"), the ui/* requests answered here.
"use strict";

(function () {
  const HOST_INFO = { name: "mcpkit inspect", version: "1" };
  const PROTOCOL = "2026-01-26";
  const frames = new Map();   // contentWindow -> frame state

  function toolUi(tool) {
    const meta = (tool && tool._meta) || {};
    const ui = (meta.ui && typeof meta.ui === "object") ? meta.ui : {};
    const uri = ui.resourceUri || meta["ui/resourceUri"];
    return { uri: typeof uri === "string" ? uri : null, visibility: Array.isArray(ui.visibility) ? ui.visibility : ["model", "app"] };
  }

  function badges(tool) {
    const ui = toolUi(tool);
    if (!ui.uri) return [];
    return ui.visibility.includes("model") ? ["app"] : ["app only"];
  }

  function reply(state, id, result, error) {
    const msg = error ? { jsonrpc: "2.0", id, error } : { jsonrpc: "2.0", id, result };
    state.win.postMessage(msg, "*");   // the app's origin is opaque: "*" is the only target
  }
  function notify(state, method, params) {
    state.win.postMessage({ jsonrpc: "2.0", method, params }, "*");
  }
  function note(state, text) {
    state.log.append(h("div", { class: "app-note" }, text));
  }

  async function handle(state, m) {
    const id = m.id;
    const isRequest = id !== undefined && id !== null;
    const params = m.params || {};
    switch (m.method) {
      case "ui/initialize":
        return reply(state, id, {
          protocolVersion: PROTOCOL, hostInfo: HOST_INFO,
          hostCapabilities: { serverTools: {}, serverResources: {}, logging: {} },
          hostContext: { toolInfo: { tool: state.tool }, theme: "light", displayMode: "inline",
            availableDisplayModes: ["inline"], platform: "web", containerDimensions: { maxHeight: 800 } },
        });
      case "ui/notifications/initialized":
        if (!state.initialized) {
          state.initialized = true;
          notify(state, "ui/notifications/tool-input", { arguments: state.args });
          notify(state, "ui/notifications/tool-result", state.result);
        }
        return;
      case "ping":
        return reply(state, id, {});
      case "tools/call": {
        try {
          const r = await api("POST", "/api/app/call", { frameId: state.frameId, name: params.name, arguments: params.arguments || {} });
          note(state, `app called ${params.name}`);
          return reply(state, id, r.result);
        } catch (e) {
          note(state, `app call to ${params.name} failed: ${e.message}`);
          return reply(state, id, undefined, { code: -32603, message: e.message });
        }
      }
      case "resources/read": {
        try {
          const r = await api("POST", "/api/read", { uri: params.uri });
          return reply(state, id, r.result);
        } catch (e) {
          return reply(state, id, undefined, { code: -32603, message: e.message });
        }
      }
      case "ui/notifications/size-changed":
        if (typeof params.height === "number" && params.height > 0) state.frame.style.height = `${Math.min(params.height, 800)}px`;
        return;
      case "notifications/message":
        note(state, `log ${params.level || ""}: ${typeof params.data === "string" ? params.data : JSON.stringify(params.data)}`);
        return;
      case "ui/message":
        note(state, `message from the app: ${JSON.stringify(params.content || params)}`);
        return isRequest ? reply(state, id, {}) : undefined;
      case "ui/update-model-context":
        note(state, `model context from the app: ${JSON.stringify(params)}`);
        return isRequest ? reply(state, id, {}) : undefined;
      case "ui/request-display-mode":
        return reply(state, id, { mode: "inline" });
      case "ui/open-link":
        note(state, `the app asked to open ${params.url} (not opened)`);
        return reply(state, id, undefined, { code: -32000, message: "the inspector does not open links" });
      default:
        if (isRequest) reply(state, id, undefined, { code: -32601, message: `Method not found: ${m.method}` });
    }
  }

  window.addEventListener("message", (event) => {
    const state = frames.get(event.source);
    if (!state) return;            // only messages from an app frame we made
    const m = event.data;
    if (!m || typeof m !== "object" || m.jsonrpc !== "2.0" || typeof m.method !== "string") return;
    handle(state, m).catch((e) => console.error(e));
  });

  async function mount(container, tool, args, result) {
    const ui = toolUi(tool);
    if (!ui.uri) return;
    const box = h("div", { class: "app-host", id: "app-host" }, h("div", { class: "status" }, `App ${ui.uri}`));
    container.append(box);
    let opened;
    try {
      opened = await api("POST", "/api/app/open", { uri: ui.uri, tool: tool.name });
    } catch (e) {
      box.append(errorBox(`the app could not be opened: ${e.message}`, "app-error"));
      return;
    }
    const frame = h("iframe", { id: "app-frame", title: `app ${ui.uri}`, class: opened.prefersBorder === false ? "app-frame borderless" : "app-frame" });
    frame.setAttribute("sandbox", "allow-scripts");
    frame.setAttribute("referrerpolicy", "no-referrer");
    if (opened.allow) frame.setAttribute("allow", opened.allow);
    const log = h("div", { class: "app-log", id: "app-log" });
    box.append(frame, h("details", {}, h("summary", {}, "Content-Security-Policy"), h("pre", { id: "app-csp" }, opened.csp),
      opened.refused && opened.refused.length ? h("pre", { class: "err" }, "refused: " + opened.refused.join("\n")) : ""), log);
    frame.src = opened.src;
    const state = { frame, win: frame.contentWindow, frameId: opened.frameId, tool, args, result, log, initialized: false };
    frames.set(frame.contentWindow, state);
  }

  window.mcpApps = { mount, badges, toolUi };
})();
