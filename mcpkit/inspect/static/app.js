// mcpkit inspect: the page. Plain JavaScript, no build step; talks to the JSON API
// documented in mcpkit/inspect/__init__.py, sending the access token on every request.
"use strict";

const TOKEN = document.querySelector('meta[name="inspector-token"]').content;
let CARD = null;
const PROGRESS = {};  // callId -> function(progress event)

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

async function api(method, path, body) {
  const init = { method, headers: { "X-Inspector-Token": TOKEN } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  let data;
  try { data = await resp.json(); } catch (e) { data = { error: `HTTP ${resp.status}` }; }
  if (!resp.ok) throw new Error(data.error || `HTTP ${resp.status}`);
  return data;
}

function json(value) { return JSON.stringify(value, null, 2); }

// ------------------------------------------------------------------ tabs
for (const b of document.querySelectorAll("#tabs button")) {
  b.addEventListener("click", () => showTab(b.dataset.tab));
}
function showTab(name) {
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === name);
  for (const s of document.querySelectorAll("section.tab")) s.classList.toggle("hidden", s.dataset.tab !== name);
  if (name === "history") loadHistory();
}

// ------------------------------------------------------------------ server card
function renderCard(card) {
  CARD = card;
  document.getElementById("target").textContent = `${card.target || ""} (${card.transport || ""})`;
  const box = document.getElementById("card");
  box.replaceChildren();
  if (!card.connected) {
    box.append(h("p", { class: "field-error", id: "card-error" }, `Not connected: ${card.error || "unknown error"}`));
    if (card.serverOutput && card.serverOutput.length) box.append(h("pre", {}, card.serverOutput.join("\n")));
    return;
  }
  const d = card.discover || {};
  const info = card.serverInfo || {};
  const caps = Object.entries(d.capabilities || {}).map(([k, v]) => {
    const flags = v && typeof v === "object" ? Object.entries(v).filter(([, on]) => on === true).map(([f]) => f) : [];
    return flags.length ? `${k} (${flags.join(", ")})` : k;
  });
  const era = card.era === "legacy" ? `legacy (${card.legacyVersion || "?"}, initialize handshake)` : card.era;
  const rows = [
    ["Name", h("span", { id: "server-name" }, info.name || "(unnamed)")],
    ["Title", info.title], ["Version", info.version], ["Era", h("span", { id: "server-era" }, era)],
    ["Versions", (d.supportedVersions || []).join(", ")], ["Capabilities", caps.join(", ") || "(none)"],
  ];
  if (card.era !== "legacy") rows.push(["ttlMs", String(d.ttlMs)], ["cacheScope", d.cacheScope]);
  if (d.instructions) rows.push(["Instructions", h("pre", {}, d.instructions)]);
  box.append(h("dl", { class: "card" }, rows.filter(([, v]) => v !== undefined && v !== null && v !== "")
    .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])));
}

async function loadCard() {
  try { renderCard(await api("GET", "/api/card")); } catch (e) { renderCard({ connected: false, error: e.message }); }
}

document.getElementById("reconnect").addEventListener("click", async () => {
  document.getElementById("card").textContent = "connecting…";
  try { renderCard(await api("POST", "/api/reconnect")); } catch (e) { renderCard({ connected: false, error: e.message }); }
  loadLists();
});

// ------------------------------------------------------------------ schema forms
function typeOf(schema) {
  let t = schema.type;
  if (Array.isArray(t)) t = t.find((x) => x !== "null") || t[0];
  if (!t && schema.enum) t = typeof schema.enum[0] === "number" ? "number" : "string";
  if (!t && (schema.anyOf || schema.oneOf)) {
    const opts = (schema.anyOf || schema.oneOf).filter((s) => s.type !== "null");
    if (opts.length === 1) return typeOf(opts[0]);
    return "json";
  }
  return t || "json";
}

function enumOf(schema) {
  if (schema.enum) return schema.enum;
  if (schema.const !== undefined) return [schema.const];
  const alts = schema.anyOf || schema.oneOf;
  if (alts && alts.every((s) => s.const !== undefined || s.type === "null")) {
    const vals = alts.filter((s) => s.const !== undefined).map((s) => s.const);
    return vals.length ? vals : null;
  }
  return null;
}

// A form for an object schema: returns { el, collect() -> { ok, value } }, showing each
// field's problems inline.
function schemaForm(schema, idPrefix) {
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const fields = [];
  const el = h("form", { class: "schema", onsubmit: (e) => e.preventDefault() });
  for (const [name, sub] of Object.entries(props)) {
    const type = typeOf(sub);
    const choices = enumOf(sub);
    const id = `${idPrefix}-${name}`;
    const hint = [type === "json" ? "JSON" : type];
    if (sub.minimum !== undefined) hint.push(`≥ ${sub.minimum}`);
    if (sub.maximum !== undefined) hint.push(`≤ ${sub.maximum}`);
    if (sub.minLength !== undefined) hint.push(`length ≥ ${sub.minLength}`);
    if (sub.maxLength !== undefined) hint.push(`length ≤ ${sub.maxLength}`);
    if (sub.pattern) hint.push(`/${sub.pattern}/`);
    if (sub.default !== undefined) hint.push(`default ${JSON.stringify(sub.default)}`);
    const label = h("label", { for: id }, name, required.has(name) ? h("span", { class: "req" }, " *") : null,
      h("span", { class: "hint" }, hint.join(", ")));
    let input;
    if (choices) {
      input = h("select", { id, name },
        required.has(name) && sub.default === undefined ? null : h("option", { value: "" }, "(not set)"),
        choices.map((c, i) => h("option", { value: String(i), selected: sub.default === c }, JSON.stringify(c))));
    } else if (type === "boolean") {
      input = h("select", { id, name }, h("option", { value: "" }, "(not set)"),
        h("option", { value: "true", selected: sub.default === true }, "true"),
        h("option", { value: "false", selected: sub.default === false }, "false"));
    } else if (type === "integer" || type === "number") {
      input = h("input", { id, name, type: "number", step: type === "integer" ? "1" : "any",
        placeholder: sub.default !== undefined ? String(sub.default) : "" });
    } else if (type === "string") {
      input = h("input", { id, name, type: "text", placeholder: sub.default !== undefined ? String(sub.default) : "" });
    } else {
      input = h("textarea", { id, name, placeholder: sub.default !== undefined ? json(sub.default) : (type === "array" ? "[]" : "{}") });
    }
    const err = h("div", { class: "field-error" });
    const desc = sub.description ? h("div", { class: "muted" }, sub.description) : null;
    el.append(h("div", { class: "field", dataset: { field: name } }, label, desc, input, err));
    fields.push({ name, sub, type, choices, input, err, required: required.has(name) });
  }
  if (!fields.length) el.append(h("p", { class: "muted" }, "No arguments."));

  function collect() {
    const value = {};
    let ok = true;
    for (const f of fields) {
      f.err.textContent = "";
      f.input.classList.remove("invalid");
      const raw = f.input.value;
      const fail = (msg) => { ok = false; f.err.textContent = msg; f.input.classList.add("invalid"); };
      if (raw === "") {
        if (f.required && f.sub.default === undefined) fail("required");
        continue;
      }
      let v;
      if (f.choices) v = f.choices[Number(raw)];
      else if (f.type === "boolean") v = raw === "true";
      else if (f.type === "integer") {
        v = Number(raw);
        if (!Number.isInteger(v)) { fail("must be an integer"); continue; }
      } else if (f.type === "number") {
        v = Number(raw);
        if (!Number.isFinite(v)) { fail("must be a number"); continue; }
      } else if (f.type === "string") v = raw;
      else {
        try { v = JSON.parse(raw); } catch (e) { fail(`not JSON: ${e.message}`); continue; }
        if (f.type === "array" && !Array.isArray(v)) { fail("must be a JSON array"); continue; }
        if (f.type === "object" && (v === null || typeof v !== "object" || Array.isArray(v))) { fail("must be a JSON object"); continue; }
      }
      if (typeof v === "number") {
        if (f.sub.minimum !== undefined && v < f.sub.minimum) { fail(`must be ≥ ${f.sub.minimum}`); continue; }
        if (f.sub.maximum !== undefined && v > f.sub.maximum) { fail(`must be ≤ ${f.sub.maximum}`); continue; }
      }
      if (typeof v === "string") {
        if (f.sub.minLength !== undefined && v.length < f.sub.minLength) { fail(`at least ${f.sub.minLength} characters`); continue; }
        if (f.sub.maxLength !== undefined && v.length > f.sub.maxLength) { fail(`at most ${f.sub.maxLength} characters`); continue; }
        if (f.sub.pattern && !new RegExp(f.sub.pattern, "u").test(v)) { fail(`must match /${f.sub.pattern}/`); continue; }
      }
      value[f.name] = v;
    }
    return { ok, value };
  }
  return { el, collect };
}

// Completion suggestions (completion/complete) on a form's text inputs, as a datalist.
function attachCompletion(formEl, ref) {
  const caps = (CARD && CARD.discover && CARD.discover.capabilities) || {};
  if (!caps.completions) return;
  for (const input of formEl.querySelectorAll("input[type=text]")) {
    const list = h("datalist", { id: `${input.id}-options` });
    input.setAttribute("list", list.id);
    input.after(list);
    const ask = async () => {
      const context = {};
      for (const other of formEl.querySelectorAll("input[type=text]")) if (other !== input && other.value) context[other.name] = other.value;
      try {
        const r = await api("POST", "/api/complete", { ref, argument: input.name, value: input.value, context });
        list.replaceChildren(...r.completion.values.map((v) => h("option", { value: v })));
        list.dataset.values = r.completion.values.join(",");
      } catch (e) { console.error(e); }
    };
    input.addEventListener("focus", ask);
    input.addEventListener("input", ask);
  }
}

// ------------------------------------------------------------------ results
function renderBlocks(blocks) {
  return (blocks || []).map((b) => {
    if (b.type === "text") {
      let parsed;
      try { parsed = JSON.parse(b.text); } catch (e) { parsed = undefined; }
      if (parsed !== undefined && typeof parsed === "object" && parsed !== null) {
        return h("details", { class: "block text json", open: true }, h("summary", {}, "text (JSON)"), h("pre", {}, json(parsed)));
      }
      return h("pre", { class: "block text" }, b.text);
    }
    if (b.type === "image") return h("div", { class: "block image" }, h("img", { src: `data:${b.mimeType};base64,${b.data}`, alt: "image" }));
    if (b.type === "audio") return h("div", { class: "block audio" }, h("audio", { controls: true, src: `data:${b.mimeType};base64,${b.data}` }));
    if (b.type === "resource_link") {
      return h("div", { class: "block link" }, "link: ", h("a", { href: "#", onclick: (e) => { e.preventDefault(); showTab("resources"); readResource(b.uri); } }, b.uri),
        b.name ? ` (${b.name})` : "", b.description ? ` — ${b.description}` : "");
    }
    if (b.type === "resource") {
      const r = b.resource || {};
      return h("div", { class: "block resource" }, h("div", { class: "muted" }, `resource ${r.uri} ${r.mimeType || ""}`),
        r.text !== undefined ? h("pre", {}, r.text) : h("pre", {}, `(binary, ${Math.floor((r.blob || "").length * 3 / 4)} bytes)`));
    }
    return h("pre", { class: "block other" }, json(b));
  });
}

function renderToolResult(out, tool) {
  const r = out.result || {};
  const box = h("div", { class: r.isError ? "result error" : "result", id: "tool-result" },
    h("div", { class: "status" }, r.isError ? "Error (isError)" : "Result", h("span", { class: "muted" }, `  ${out.ms} ms`)));
  box.append(...renderBlocks(r.content));
  if (r.structuredContent !== undefined) {
    box.append(h("details", { class: "structured", open: true }, h("summary", {}, "structuredContent"), h("pre", {}, json(r.structuredContent))));
    if (tool && tool.outputSchema) box.append(h("details", {}, h("summary", {}, "outputSchema"), h("pre", {}, json(tool.outputSchema))));
  }
  if (out.progress && out.progress.length) {
    box.append(h("details", {}, h("summary", {}, `progress (${out.progress.length})`),
      h("pre", { class: "progress" }, out.progress.map((p) => `${p.progress}${p.total ? "/" + p.total : ""} ${p.message || ""}`).join("\n"))));
  }
  return box;
}

function errorBox(message, id) {
  return h("div", { class: "result error", id }, h("div", { class: "status" }, "Failed"), h("pre", {}, message));
}

// ------------------------------------------------------------------ lists
function listInto(id, items, label, onpick) {
  const ul = document.getElementById(id);
  ul.replaceChildren(...items.map((it) => {
    const li = h("li", { dataset: { name: label(it).name } }, h("span", { class: "name" }, label(it).name),
      ...(label(it).badges || []).map((b) => h("span", { class: "badge" }, b)),
      label(it).desc ? h("span", { class: "desc" }, label(it).desc) : null);
    li.addEventListener("click", () => {
      for (const x of ul.children) x.classList.remove("selected");
      li.classList.add("selected");
      onpick(it);
    });
    return li;
  }));
  if (!items.length) ul.append(h("li", { class: "muted" }, "(none)"));
}

function firstLine(text) { return (text || "").split("\n")[0]; }

function annotationBadges(a) {
  if (!a) return [];
  const out = [];
  if (a.readOnlyHint) out.push("read-only");
  if (a.destructiveHint) out.push("destructive");
  if (a.idempotentHint) out.push("idempotent");
  if (a.openWorldHint) out.push("open world");
  return out;
}

async function loadLists() {
  const caps = (CARD && CARD.discover && CARD.discover.capabilities) || {};
  const jobs = [];
  if (caps.tools) jobs.push(api("GET", "/api/tools").then((d) => listInto("tools-list", d.items,
    (t) => ({ name: t.name, desc: firstLine(t.description),
      badges: [...annotationBadges(t.annotations), ...(window.mcpApps ? window.mcpApps.badges(t) : [])] }), showTool)));
  else listInto("tools-list", [], () => ({}), () => {});
  if (caps.resources) {
    jobs.push(api("GET", "/api/resources").then((d) => listInto("resources-list", d.items,
      (r) => ({ name: r.uri, desc: r.name + (r.description ? ` — ${firstLine(r.description)}` : "") }), (r) => readResource(r.uri))));
    jobs.push(api("GET", "/api/templates").then((d) => listInto("templates-list", d.items,
      (r) => ({ name: r.uriTemplate, desc: r.name + (r.description ? ` — ${firstLine(r.description)}` : "") }), showTemplate)));
  }
  if (caps.prompts) jobs.push(api("GET", "/api/prompts").then((d) => listInto("prompts-list", d.items,
    (p) => ({ name: p.name, desc: firstLine(p.description) }), showPrompt)));
  const results = await Promise.allSettled(jobs);
  for (const r of results) if (r.status === "rejected") console.error(r.reason);
}

// ------------------------------------------------------------------ tools
function showTool(tool) {
  const box = document.getElementById("tool-detail");
  const form = schemaForm(tool.inputSchema || {}, `arg-${tool.name}`);
  const out = h("div", { id: "tool-output" });
  const run = h("button", { class: "primary", type: "button", id: "call-tool" }, `Call ${tool.name}`);
  run.addEventListener("click", async () => {
    const { ok, value } = form.collect();
    if (!ok) return;
    const callId = Math.random().toString(36).slice(2);
    run.disabled = true;
    const bar = h("progress", { id: "tool-progress-bar" });
    const line = h("span", { id: "tool-progress-text", class: "progress" }, "calling…");
    const cancel = h("button", { type: "button", id: "cancel-tool" }, "Cancel");
    cancel.addEventListener("click", () => api("POST", "/api/cancel", { callId }).catch(() => {}));
    out.replaceChildren(h("div", { class: "running", id: "tool-running" }, bar, " ", line, " ", cancel));
    PROGRESS[callId] = (p) => {
      if (p.total) { bar.max = p.total; bar.value = p.progress; } else bar.removeAttribute("value");
      line.textContent = `${p.progress}${p.total ? "/" + p.total : ""} ${p.message || ""}`;
    };
    try {
      const r = await api("POST", "/api/call", { name: tool.name, arguments: value, callId });
      out.replaceChildren(r.cancelled ? errorBox(`cancelled after ${r.ms} ms`, "tool-result") : renderToolResult(r, tool));
      if (!r.cancelled && window.mcpApps) window.mcpApps.mount(out, tool, value, r.result);
    } catch (e) {
      out.replaceChildren(errorBox(e.message, "tool-result"));
    } finally {
      delete PROGRESS[callId];
      run.disabled = false;
    }
  });
  form.el.append(run);
  box.replaceChildren(
    h("h3", {}, tool.title || tool.name, ...annotationBadges(tool.annotations).map((b) => h("span", { class: "badge" }, b))),
    tool.description ? h("pre", { class: "muted" }, tool.description) : null,
    form.el, out,
    h("details", {}, h("summary", {}, "inputSchema"), h("pre", {}, json(tool.inputSchema || {}))),
  );
}

// ------------------------------------------------------------------ resources
async function readResource(uri) {
  const box = document.getElementById("resource-detail");
  box.replaceChildren(h("h3", {}, uri), h("p", { class: "progress" }, "reading…"));
  try {
    const out = await api("POST", "/api/read", { uri });
    const contents = (out.result && out.result.contents) || [];
    box.replaceChildren(h("h3", {}, uri), h("div", { class: "result", id: "resource-result" },
      h("div", { class: "status" }, "Contents", h("span", { class: "muted" }, `  ${out.ms} ms`)),
      ...contents.map((c) => c.text !== undefined
        ? h("div", {}, h("div", { class: "muted" }, `${c.uri} ${c.mimeType || ""}`), h("pre", {}, c.text))
        : (c.mimeType || "").startsWith("image/")
          ? h("img", { src: `data:${c.mimeType};base64,${c.blob}`, alt: c.uri })
          : h("pre", {}, `${c.uri}: binary, ${Math.floor((c.blob || "").length * 3 / 4)} bytes`))));
  } catch (e) {
    box.replaceChildren(h("h3", {}, uri), errorBox(e.message, "resource-result"));
  }
}

function showTemplate(tpl) {
  const box = document.getElementById("resource-detail");
  const names = [...tpl.uriTemplate.matchAll(/\{[+#./;?&]?([^}]+)\}/g)].flatMap((m) => m[1].split(",").map((s) => s.replace(/[*]|:\d+$/g, "")));
  const schema = { type: "object", properties: Object.fromEntries(names.map((n) => [n, { type: "string" }])), required: names };
  const form = schemaForm(schema, "tpl");
  const go = h("button", { class: "primary", type: "button", id: "read-template" }, "Read");
  go.addEventListener("click", () => {
    const { ok, value } = form.collect();
    if (!ok) return;
    const uri = tpl.uriTemplate.replace(/\{[+#./;?&]?([^}]+)\}/g, (_, n) => encodeURIComponent(value[n.split(",")[0]] || ""));
    readResource(uri);
  });
  form.el.append(go);
  attachCompletion(form.el, { type: "ref/resource", uri: tpl.uriTemplate });
  box.replaceChildren(h("h3", {}, tpl.uriTemplate), tpl.description ? h("p", { class: "muted" }, tpl.description) : null, form.el);
}

// ------------------------------------------------------------------ prompts
function showPrompt(prompt) {
  const box = document.getElementById("prompt-detail");
  const args = prompt.arguments || [];
  const schema = { type: "object", properties: Object.fromEntries(args.map((a) => [a.name, { type: "string", description: a.description }])),
    required: args.filter((a) => a.required).map((a) => a.name) };
  const form = schemaForm(schema, `prompt-${prompt.name}`);
  const out = h("div", { id: "prompt-output" });
  const go = h("button", { class: "primary", type: "button", id: "get-prompt" }, `Get ${prompt.name}`);
  go.addEventListener("click", async () => {
    const { ok, value } = form.collect();
    if (!ok) return;
    try {
      const r = await api("POST", "/api/prompt", { name: prompt.name, arguments: value });
      const msgs = (r.result && r.result.messages) || [];
      out.replaceChildren(h("div", { class: "result", id: "prompt-result" },
        h("div", { class: "status" }, "Messages", h("span", { class: "muted" }, `  ${r.ms} ms`)),
        r.result.description ? h("p", { class: "muted" }, r.result.description) : null,
        ...msgs.map((m) => h("div", { class: "message" }, h("strong", {}, m.role), ...renderBlocks([m.content])))));
    } catch (e) {
      out.replaceChildren(errorBox(e.message, "prompt-result"));
    }
  });
  form.el.append(go);
  attachCompletion(form.el, { type: "ref/prompt", name: prompt.name });
  box.replaceChildren(h("h3", {}, prompt.title || prompt.name), prompt.description ? h("p", { class: "muted" }, prompt.description) : null, form.el, out);
}

// ------------------------------------------------------------------ history
function shellQuote(s) { return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`; }

function asCommand(entry) {
  const target = (CARD && CARD.cliTarget) || "TARGET";
  // the command goes last: after "-- COMMAND ..." nothing else can follow
  const p = entry.params || {};
  if (entry.method === "tools/call") return `mcpkit call ${shellQuote(p.name)} --args ${shellQuote(JSON.stringify(p.arguments || {}))} ${target}`;
  if (entry.method === "subscriptions/listen") return "";
  if (entry.method === "resources/read") return `mcpkit read ${shellQuote(p.uri)} ${target}`;
  if (entry.method === "prompts/get") return `mcpkit prompt ${shellQuote(p.name)} ${Object.entries(p.arguments || {}).map(([k, v]) => shellQuote(`${k}=${v}`)).join(" ")} ${target}`;
  if (entry.method === "completion/complete" || entry.method === "subscriptions/listen") return "";
  if (entry.method === "server/discover") return `mcpkit discover ${target}`;
  const what = { "tools/list": "tools", "resources/list": "resources", "resources/templates/list": "templates", "prompts/list": "prompts" }[entry.method];
  return what ? `mcpkit list ${what} ${target}` : "";
}

async function loadHistory() {
  let items = [];
  try { items = (await api("GET", "/api/history")).items; } catch (e) { console.error(e); }
  const filter = document.getElementById("history-filter").value.toLowerCase();
  const body = document.querySelector("#history tbody");
  body.replaceChildren(...items.filter((e) => !filter || JSON.stringify(e).toLowerCase().includes(filter)).reverse().map((e) => {
    const cmd = asCommand(e);
    return h("tr", { class: "history-row" }, h("td", {}, e.id), h("td", {}, e.from === "server" ? "← " : e.from === "app" ? "app → " : "→ ", h("code", {}, e.method)), h("td", {}, e.ms),
      h("td", { class: e.error ? "err" : "" }, h("details", {}, h("summary", {}, e.error ? `error: ${e.error}` : "ok"),
        h("pre", {}, `→ ${json(e.params)}\n← ${json(e.error !== undefined ? { error: e.error } : e.result)}`))),
      h("td", {}, cmd ? h("button", { type: "button", title: cmd, onclick: () => navigator.clipboard && navigator.clipboard.writeText(cmd) }, "copy as mcpkit") : ""));
  }));
}
document.getElementById("history-filter").addEventListener("input", loadHistory);
document.getElementById("history-refresh").addEventListener("click", loadHistory);

// ------------------------------------------------------------------ live events
function answerPanel(ev) {
  const panel = document.getElementById("input-panel");
  const p = ev.params || {};
  const send = async (result) => {
    try { await api("POST", "/api/answer", { id: ev.id, result }); } catch (e) { console.error(e); }
    panel.classList.add("hidden");
    panel.replaceChildren();
  };
  panel.dataset.id = ev.id;
  if (ev.kind === "elicitation") {
    const buttons = h("div", { class: "buttons" });
    const children = [h("h3", {}, "The server asks (elicitation)"), h("p", { id: "input-message" }, p.message || "")];
    if (p.mode === "url") {
      children.push(h("p", {}, h("a", { href: p.url, target: "_blank", rel: "noopener" }, p.url)));
      const acc = h("button", { type: "button", class: "primary", id: "input-accept" }, "Done");
      acc.addEventListener("click", () => send({ action: "accept" }));
      buttons.append(acc);
    } else {
      const form = schemaForm(p.requestedSchema || { type: "object", properties: {} }, "elicit");
      children.push(form.el);
      const acc = h("button", { type: "button", class: "primary", id: "input-accept" }, "Accept");
      acc.addEventListener("click", () => { const { ok, value } = form.collect(); if (ok) send({ action: "accept", content: value }); });
      buttons.append(acc);
    }
    const dec = h("button", { type: "button", id: "input-decline" }, "Decline");
    dec.addEventListener("click", () => send({ action: "decline" }));
    const can = h("button", { type: "button", id: "input-cancel" }, "Cancel");
    can.addEventListener("click", () => send({ action: "cancel" }));
    buttons.append(dec, can);
    panel.replaceChildren(...children, buttons);
  } else if (ev.kind === "sampling") {
    const text = h("textarea", { id: "sampling-answer", placeholder: "answer as the model" });
    const acc = h("button", { type: "button", class: "primary", id: "input-accept" }, "Send as the model");
    acc.addEventListener("click", () => send({ role: "assistant", content: { type: "text", text: text.value }, model: "mcpkit-inspect (a person)", stopReason: "endTurn" }));
    const dec = h("button", { type: "button", id: "input-decline" }, "Refuse");
    dec.addEventListener("click", () => send({}));
    panel.replaceChildren(h("h3", {}, "The server asks the model (sampling)"),
      p.systemPrompt ? h("pre", { class: "muted" }, `system: ${p.systemPrompt}`) : null,
      ...(p.messages || []).map((m) => h("div", { class: "message" }, h("strong", {}, m.role), ...renderBlocks(Array.isArray(m.content) ? m.content : [m.content]))),
      text, h("div", { class: "buttons" }, acc, dec));
  }
  panel.classList.remove("hidden");
}

function logNotification(n) {
  const body = document.querySelector("#listen-log tbody");
  body.prepend(h("tr", { class: "notification" }, h("td", {}, new Date(n.at * 1000).toLocaleTimeString()),
    h("td", {}, h("code", {}, n.method)), h("td", {}, h("pre", {}, JSON.stringify(n.params)))));
}

function connectEvents() {
  const es = new EventSource(`api/events?token=${encodeURIComponent(TOKEN)}`);
  es.addEventListener("progress", (m) => { const p = JSON.parse(m.data); if (PROGRESS[p.callId]) PROGRESS[p.callId](p); });
  es.addEventListener("input", (m) => answerPanel(JSON.parse(m.data)));
  es.addEventListener("input-done", (m) => {
    const panel = document.getElementById("input-panel");
    if (panel.dataset.id === JSON.parse(m.data).id) { panel.classList.add("hidden"); panel.replaceChildren(); }
  });
  es.addEventListener("notification", (m) => logNotification(JSON.parse(m.data)));
  es.addEventListener("listen-ended", (m) => {
    document.getElementById("listen-state").textContent = `stopped: ${JSON.parse(m.data).reason}`;
  });
  es.addEventListener("open", () => { document.body.dataset.events = "open"; });
}

document.getElementById("listen-start").addEventListener("click", async () => {
  const uris = document.getElementById("listen-uris").value.split(/\s+/).filter(Boolean);
  const state = document.getElementById("listen-state");
  try {
    await api("POST", "/api/listen", { tools: document.getElementById("listen-tools").checked,
      prompts: document.getElementById("listen-prompts").checked,
      resourcesList: document.getElementById("listen-resources-list").checked, resources: uris });
    state.textContent = `listening${uris.length ? " to " + uris.join(", ") : ""}`;
  } catch (e) { state.textContent = `failed: ${e.message}`; }
});
document.getElementById("listen-stop").addEventListener("click", async () => {
  try { await api("POST", "/api/unlisten", {}); } catch (e) { console.error(e); }
  document.getElementById("listen-state").textContent = "not listening";
});

// ------------------------------------------------------------------ start
connectEvents();
loadCard().then(loadLists);
