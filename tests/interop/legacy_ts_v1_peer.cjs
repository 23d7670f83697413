// Legacy interop peer: the official MCP TypeScript SDK v1 client (npm @modelcontextprotocol/sdk,
// a 2025-11-25 `initialize` client only) against an MCP server, over HTTP or stdio.
//
//   node legacy_ts_v1_peer.cjs PREFIX SCENARIO http URL
//   node legacy_ts_v1_peer.cjs PREFIX SCENARIO stdio COMMAND [ARGS...]
//
// PREFIX is the npm prefix the package was installed into (scripts/install_peers.sh ts-v1);
// the package is loaded from there, so this script can live in the repository. For stdio,
// LEGACY_PEER_SERVER_PYTHONPATH (when set) becomes the server's PYTHONPATH.
// SCENARIO "demo": examples/demo.py (add, convert_temperature, count_down with progress, a tool
// error, a resource, a prompt, ping). "extras": tests/interop/legacy_test_server.py (setLevel and
// log messages; elicitation, sampling and roots requests answered by this client; subscribe and
// the update notification; tools/list_changed; -32002 for a missing resource).
// Prints one JSON object on stdout: what each step returned, or {"error": ...} for the step that
// failed (exit status 0 either way, so the test can assert on it).
'use strict';
const path = require('node:path');
const fs = require('node:fs');
const { createRequire } = require('node:module');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
async function waitFor(pred, ms = 10000) {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) return false;
    await sleep(20);
  }
  return true;
}

async function main() {
  const [prefix, scenario, transportKind, ...target] = process.argv.slice(2);
  const req = createRequire(path.join(path.resolve(prefix), 'package.json'));
  const { Client } = req('@modelcontextprotocol/sdk/client/index.js');
  const types = req('@modelcontextprotocol/sdk/types.js');
  const pkg = JSON.parse(fs.readFileSync(
    path.join(path.resolve(prefix), 'node_modules', '@modelcontextprotocol', 'sdk', 'package.json'), 'utf8'));

  const out = { peer: '@modelcontextprotocol/sdk (npm)', peerVersion: pkg.version, node: process.version,
    mode: 'legacy', transport: transportKind, scenario };
  let transport;
  if (transportKind === 'http') {
    const { StreamableHTTPClientTransport } = req('@modelcontextprotocol/sdk/client/streamableHttp.js');
    transport = new StreamableHTTPClientTransport(new URL(target[0]));
  } else {
    const { StdioClientTransport, getDefaultEnvironment } = req('@modelcontextprotocol/sdk/client/stdio.js');
    const env = { ...getDefaultEnvironment() };
    if (process.env.LEGACY_PEER_SERVER_PYTHONPATH) env.PYTHONPATH = process.env.LEGACY_PEER_SERVER_PYTHONPATH;
    transport = new StdioClientTransport({ command: target[0], args: target.slice(1), env, stderr: 'inherit' });
  }

  const client = new Client({ name: 'mcpkit-legacy-ts-v1', version: '1.0.0' },
    { capabilities: { elicitation: {}, sampling: {}, roots: { listChanged: true } } });
  const logs = [];
  const notes = [];
  const asked = [];
  client.setNotificationHandler(types.LoggingMessageNotificationSchema, (n) => {
    logs.push({ level: n.params.level, data: n.params.data });
    notes.push({ method: n.method, params: n.params });
  });
  client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, (n) => notes.push({ method: n.method, params: n.params }));
  client.setNotificationHandler(types.ToolListChangedNotificationSchema, (n) => notes.push({ method: n.method, params: n.params ?? null }));
  client.setRequestHandler(types.ElicitRequestSchema, async () => {
    asked.push('elicitation/create');
    return { action: 'accept', content: { name: 'Brendan' } };
  });
  client.setRequestHandler(types.CreateMessageRequestSchema, async () => {
    asked.push('sampling/createMessage');
    return { role: 'assistant', content: { type: 'text', text: 'ts-sampled' }, model: 'peer-model' };
  });
  client.setRequestHandler(types.ListRootsRequestSchema, async () => {
    asked.push('roots/list');
    return { roots: [{ uri: 'file:///ts/root', name: 'ts' }] };
  });

  const opts = { timeout: 30000 };
  let step = 'connect';
  try {
    await client.connect(transport, opts);
    out.protocolVersion = transport.protocolVersion ?? null;
    out.serverInfo = client.getServerVersion() ?? null;
    out.serverCapabilities = client.getServerCapabilities() ?? null;

    step = 'ping';
    out.ping = await client.ping(opts);

    step = 'tools/list';
    const listed = await client.listTools(undefined, opts);
    out.tools = Object.fromEntries(listed.tools.map((t) => [t.name, t]));

    step = 'tools/call add';
    out.add = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } }, undefined, opts);

    if (scenario === 'demo') {
      step = 'tools/call convert_temperature';
      out.convert = await client.callTool({ name: 'convert_temperature', arguments: { value: 212, to: 'celsius' } }, undefined, opts);

      step = 'tools/call count_down (progress)';
      const progress = [];
      out.countDown = await client.callTool({ name: 'count_down', arguments: { start: 3 } }, undefined,
        { ...opts, onprogress: (p) => progress.push({ progress: p.progress, total: p.total ?? null, message: p.message ?? null }) });
      out.progress = progress;

      step = 'tools/call count_down (tool error)';
      out.toolError = await client.callTool({ name: 'count_down', arguments: { start: 500 } }, undefined, opts);

      step = 'resources/read';
      out.note = await client.readResource({ uri: 'notes://groceries' }, opts);

      step = 'prompts/get';
      out.prompt = await client.getPrompt({ name: 'summarize', arguments: { name: 'ideas' } }, opts);
    } else {
      step = 'logging/setLevel';
      out.setLevel = await client.setLoggingLevel('info', opts);
      step = 'tools/call log_steps';
      out.logSteps = await client.callTool({ name: 'log_steps', arguments: { steps: 2 } }, undefined, opts);
      await waitFor(() => logs.length >= 2, 5000);
      out.logs = logs.slice();

      step = 'tools/call ask_all (elicitation, sampling, roots)';
      out.askAll = await client.callTool({ name: 'ask_all', arguments: {} }, undefined, opts);
      out.asked = asked.slice();

      step = 'resources/subscribe';
      out.subscribe = await client.subscribeResource({ uri: 'mem://counter' }, opts);
      step = 'tools/call touch';
      out.touch = await client.callTool({ name: 'touch', arguments: { uri: 'mem://counter' } }, undefined, opts);
      await waitFor(() => notes.some((n) => n.method === 'notifications/resources/updated'));

      step = 'tools/call add_tool';
      out.addTool = await client.callTool({ name: 'add_tool', arguments: { name: 'ts_peer_tool' } }, undefined, opts);
      await waitFor(() => notes.some((n) => n.method === 'notifications/tools/list_changed'));
      out.notifications = notes.slice();
      step = 'tools/list (after add_tool)';
      out.toolsAfter = (await client.listTools(undefined, opts)).tools.map((t) => t.name).sort();

      step = 'resources/read (missing)';
      try {
        await client.readResource({ uri: 'mem://items/nothing' }, opts);
        out.missing = { code: null };
      } catch (err) {
        out.missing = { code: err && err.code !== undefined ? err.code : null, message: String(err && err.message || err) };
      }
    }
  } catch (err) {
    out.error = { step, type: err && err.constructor ? err.constructor.name : typeof err,
      code: err && err.code !== undefined ? err.code : null, message: String(err && err.message || err),
      stack: String(err && err.stack || '').slice(-4000) };
  }
  if (transportKind === 'http' && transport.sessionId) {
    out.sessionId = transport.sessionId;
    try {
      await transport.terminateSession();  // DELETE: ends the session on the server
      out.terminated = true;
    } catch (err) {
      out.terminated = String(err && err.message || err);
    }
  }
  try { await client.close(); } catch { /* already closed */ }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(2); });
