-- wrk script for the OAuth rows (bench/auth.py): the echo tools/call of mcp.lua, with
--   -- bearer TOKEN            an Authorization: Bearer header on every request, or
--   -- dpop TOKEN PROOFS_FILE  Authorization: DPoP and a fresh DPoP proof per request (one
--                             line of PROOFS_FILE each; a proof is never sent twice).
-- Prints the same BENCHJSON line as mcp.lua.

local META = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientCapabilities":{},'
  .. '"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"}}'
local ECHO_TEXT = "bench-echo-payload"

checks = 0
bad = 0
local threads = {}
local proofs = nil
local next_proof = 1

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
  wrk.headers["Mcp-Method"] = "tools/call"
  wrk.headers["Mcp-Name"] = "echo"
  wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
    .. '"arguments":{"text":"' .. ECHO_TEXT .. '"},' .. META .. '}}'
  local kind = args[1]
  if kind == "bearer" then
    wrk.headers["Authorization"] = "Bearer " .. args[2]
  elseif kind == "dpop" then
    wrk.headers["Authorization"] = "DPoP " .. args[2]
    proofs = {}
    for line in io.lines(args[3]) do
      table.insert(proofs, line)
    end
  elseif kind ~= "none" then
    error("usage: -- none | bearer TOKEN | dpop TOKEN PROOFS_FILE")
  end
end

function request()
  if proofs ~= nil then
    local proof = proofs[next_proof]
    next_proof = next_proof + 1
    if proof == nil then
      error("ran out of DPoP proofs: make more")
    end
    wrk.headers["DPoP"] = proof
  end
  return wrk.format()
end

function response(status, headers, body)
  checks = checks + 1
  if status ~= 200 or body == nil or not string.find(body, ECHO_TEXT, 1, true) then
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
    'BENCHJSON {"requests":%d,"duration_us":%d,"p50_us":%d,"p99_us":%d,"checked":%d,"bad":%d,'
    .. '"errors":%d}\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    total_checks, total_bad, e.connect + e.read + e.write + e.status + e.timeout))
end
