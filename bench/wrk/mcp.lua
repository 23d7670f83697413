-- wrk script for the mcpkit / official SDK MCP benchmark.
--
-- Usage: wrk ... -s mcp.lua http://127.0.0.1:PORT/mcp -- echo|discover
--        wrk ... -s mcp.lua http://127.0.0.1:PORT/mcp -- echo-session SESSION_ID
--
-- Sends one 2026-07-28 JSON-RPC request per POST with the routing headers the
-- revision requires (echo-session: a 2025-11-25 tools/call in the session
-- SESSION_ID, which the caller initialized), checks every response (non-200, or a body lacking
-- "result" -- and, for echo, lacking the echoed text -- counts as an error),
-- and prints one machine-readable line from done():
--   BENCHJSON {"requests":..,"duration_us":..,"p50_us":..,...}

local META = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientCapabilities":{},'
  .. '"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}'
local ECHO_TEXT = "bench-echo-payload"

local mode = "echo"
-- Per-thread counters must be globals: done() reads them with thread:get().
checks = 0
bad = 0
local threads = {}

local function configure(m, session)
  mode = m or "echo"
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
  if mode == "discover" then
    wrk.headers["Mcp-Method"] = "server/discover"
    wrk.headers["Mcp-Name"] = nil
    wrk.body = '{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{' .. META .. '}}'
  elseif mode == "echo" then
    wrk.headers["Mcp-Method"] = "tools/call"
    wrk.headers["Mcp-Name"] = "echo"
    wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
      .. '"arguments":{"text":"' .. ECHO_TEXT .. '"},' .. META .. '}}'
  elseif mode == "echo-session" then
    if session == nil then error("echo-session needs the session id") end
    wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
    wrk.headers["Mcp-Session-Id"] = session
    wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
      .. '"arguments":{"text":"' .. ECHO_TEXT .. '"}}}'
  else
    error("mode must be echo, echo-session or discover, got " .. tostring(mode))
  end
end

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  configure(args[1], args[2])
end

function response(status, headers, body)
  checks = checks + 1
  if status ~= 200 or body == nil or not string.find(body, '"result"', 1, true)
     or (mode ~= "discover" and not string.find(body, ECHO_TEXT, 1, true)) then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local total_checks, total_bad = 0, 0
  for _, t in ipairs(threads) do
    total_checks = total_checks + (t:get("checks") or 0)
    total_bad = total_bad + (t:get("bad") or 0)
  end
  local e = summary.errors
  io.write(string.format(
    'BENCHJSON {"requests":%d,"duration_us":%d,"bytes":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d,'
    .. '"max_us":%d,"mean_us":%.1f,"checked":%d,"bad_body_or_status":%d,"connect_errors":%d,'
    .. '"read_errors":%d,"write_errors":%d,"status_errors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency.max, latency.mean, total_checks, total_bad,
    e.connect, e.read, e.write, e.status, e.timeout))
end
