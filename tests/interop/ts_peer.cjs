// Interop peer: the official MCP TypeScript SDK v2 client (npm @modelcontextprotocol/client)
// against an MCP server URL.
//
//   node ts_peer.cjs PEERS_DIR URL MODE
//
// PEERS_DIR is the npm prefix the package was installed into (scripts/install_peers.sh);
// the package is loaded from there, so this script can live in the repository.
// MODE: "pin" -> versionNegotiation {mode: {pin: "2026-07-28"}} (discover must offer it),
//       "auto" -> probe server/discover, fall back to initialize,
//       "default" -> no versionNegotiation option (the SDK's default, legacy initialize).
// Prints one JSON object on stdout: what each step returned, or {"error": ...} for the
// step that failed (exit status 0 either way, so the test can assert on it).
'use strict';
const path = require('node:path');
const { createRequire } = require('node:module');

async function main() {
  const [peersDir, url, modeArg = 'pin'] = process.argv.slice(2);
  const peerRequire = createRequire(path.join(path.resolve(peersDir), 'package.json'));
  const { Client, StreamableHTTPClientTransport } = peerRequire('@modelcontextprotocol/client');
  const fs = require('node:fs');
  const pkg = JSON.parse(fs.readFileSync(
    path.join(path.resolve(peersDir), 'node_modules', '@modelcontextprotocol', 'client', 'package.json'), 'utf8'));

  const out = { peer: '@modelcontextprotocol/client (npm)', peerVersion: pkg.version, node: process.version, mode: modeArg };
  const options = {};
  if (modeArg === 'pin') options.versionNegotiation = { mode: { pin: '2026-07-28' } };
  else if (modeArg !== 'default') options.versionNegotiation = { mode: modeArg };
  const client = new Client({ name: 'mcpkit-interop-ts', version: '1.0.0' }, options);
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const callOpts = { timeout: 30000 };
  let step = 'connect';
  try {
    await client.connect(transport, callOpts);
    out.protocolVersion = client.getNegotiatedProtocolVersion ? client.getNegotiatedProtocolVersion() : null;
    out.serverInfo = client.getServerVersion ? client.getServerVersion() ?? null : null;

    step = 'tools/list';
    const listed = await client.listTools(undefined, callOpts);
    out.tools = Object.fromEntries(listed.tools.map((t) => [t.name, t]));

    step = 'tools/call add';
    out.add = await client.callTool({ name: 'add', arguments: { a: 2, b: 3 } }, callOpts);

    step = 'tools/call convert_temperature';
    out.convert = await client.callTool({ name: 'convert_temperature', arguments: { value: 212, to: 'celsius' } }, callOpts);

    step = 'tools/call count_down (progress over SSE)';
    const progress = [];
    out.countDown = await client.callTool({ name: 'count_down', arguments: { start: 3 } },
      { ...callOpts, onprogress: (p) => progress.push({ progress: p.progress, total: p.total ?? null, message: p.message ?? null }) });
    out.progress = progress;

    step = 'tools/call count_down (tool error)';
    out.toolError = await client.callTool({ name: 'count_down', arguments: { start: 500 } }, callOpts);
  } catch (err) {
    out.error = { step, type: err && err.constructor ? err.constructor.name : typeof err,
      code: err && err.code !== undefined ? err.code : null, message: String(err && err.message || err),
      data: err && err.data !== undefined ? err.data : null, stack: String(err && err.stack || '').slice(-4000) };
  }
  try { await client.close(); } catch { /* already closed */ }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((err) => { console.error(err); process.exit(2); });
