#!/usr/bin/env bash
# conformance/run.sh - run the external MCP conformance harness
# (@modelcontextprotocol/conformance, npm) against a server or a client and
# print a per-scenario table, a check count, and a closing line
# "N passed, M failed" (scenarios).
#
# mcpkit's copy of the shared conformance runner; it installs
# Node 22 and the harness from npm itself and caches them. For mcpkit's own server
# legs (everything_server.py + baselines) use `run.sh server-legs` or
# conformance/run_server_legs.sh directly.
#
# Usage:
#   run.sh server URL [harness args...]
#       Test a running MCP server at URL (e.g. http://127.0.0.1:3001/mcp).
#   run.sh server-cmd 'SERVER COMMAND' URL [harness args...]
#       Start SERVER COMMAND (bash -c, own process group), wait until URL
#       answers, test it, then stop that process group.
#   run.sh client 'CLIENT COMMAND' [harness args...]
#       The harness runs CLIENT COMMAND <mock-server-url> once per scenario,
#       with MCP_CONFORMANCE_SCENARIO / MCP_CONFORMANCE_PROTOCOL_VERSION /
#       MCP_CONFORMANCE_CONTEXT in the environment.
#   run.sh list [args...]     -> harness `list` (e.g. --requirements 2026-07-28)
#   run.sh harness [args...]  -> raw harness CLI, output untouched
#   run.sh install            -> only install harness (+ Node >= 22 if needed)
#   run.sh source             -> write a prettified copy of the harness
#                                bundle (all scenario sources) and print its path
#   run.sh server-legs        -> conformance/run_server_legs.sh: start mcpkit's
#                                everything_server.py, run both 2026-07-28 legs
#
# Harness args are passed through unchanged (--requirements REV, --suite S,
# --spec-version V, --scenario NAME, --expected-failures FILE, --timeout MS,
# --verbose, -o/--output-dir DIR ...). Defaults added by this script:
#   * no --scenario/--suite/--requirements/--spec-version given
#       -> --requirements 2026-07-28
#   * client mode with --spec-version but no --suite/--scenario -> --suite all
#   * client mode without --timeout -> --timeout 60000
#   * no -o/--output-dir -> a fresh directory under $CONFORMANCE_RESULTS
#
# Environment:
#   CONFORMANCE_VERSION   harness version (default 0.2.0-alpha.12)
#   CONFORMANCE_CACHE     install dir (default ${XDG_CACHE_HOME:-$HOME/.cache}/mcp-conformance)
#   CONFORMANCE_RESULTS   results root (default ${TMPDIR:-/tmp}/mcp-conformance-results)
#   CONFORMANCE_NODE      node binary to use (must be >= 22)
#   CONFORMANCE_VERBOSE=1 also stream the harness output to stderr
#   CONFORMANCE_SCORED_ONLY=1  with --requirements: the closing line counts only
#                         scored scenarios (extensions / pending / added-after-
#                         release ones are still listed in the table)
#   CONFORMANCE_WAIT_S    seconds to wait for the server URL (default 30)
#
# Exit status: the harness's own exit status (it honours --requirements scoring
# and --expected-failures baselines); 2 if nothing could be run or parsed.
set -uo pipefail

CONF_VERSION="${CONFORMANCE_VERSION:-0.2.0-alpha.12}"
CACHE="${CONFORMANCE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-conformance}"
RESULTS_ROOT="${CONFORMANCE_RESULTS:-${TMPDIR:-/tmp}/mcp-conformance-results}"
WAIT_S="${CONFORMANCE_WAIT_S:-30}"
HARNESS_DIR="$CACHE/harness-$CONF_VERSION"
HARNESS_JS="$HARNESS_DIR/node_modules/@modelcontextprotocol/conformance/dist/index.js"
NODE_MIN_MAJOR=22

log() { printf '%s\n' "$*" >&2; }
die() { log "run.sh: $*"; exit 2; }

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }

node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

# --- Node >= 22 (the harness bundle imports fs.globSync, absent from Node 20) ---
find_node() {
    if [ -n "${CONFORMANCE_NODE:-}" ]; then
        [ "$(node_major "$CONFORMANCE_NODE")" -ge "$NODE_MIN_MAJOR" ] ||
            die "CONFORMANCE_NODE=$CONFORMANCE_NODE is not Node >= $NODE_MIN_MAJOR"
        NODE="$CONFORMANCE_NODE"; return
    fi
    if command -v node >/dev/null 2>&1 && [ "$(node_major node)" -ge "$NODE_MIN_MAJOR" ]; then
        NODE="$(command -v node)"; return
    fi
    local arch pkg dir
    case "$(uname -m)" in
        x86_64 | amd64) arch=x64 ;;
        aarch64 | arm64) arch=arm64 ;;
        *) die "no Node >= $NODE_MIN_MAJOR on PATH and no npm node package for $(uname -m)" ;;
    esac
    pkg="node-linux-$arch"
    dir="$CACHE/node$NODE_MIN_MAJOR"
    NODE="$dir/node_modules/$pkg/bin/node"
    if [ ! -x "$NODE" ] || [ "$(node_major "$NODE")" -lt "$NODE_MIN_MAJOR" ]; then
        command -v npm >/dev/null 2>&1 || die "npm is needed to install $pkg@$NODE_MIN_MAJOR"
        log "run.sh: installing $pkg@$NODE_MIN_MAJOR (npm registry) into $dir"
        mkdir -p "$dir" && [ -f "$dir/package.json" ] || echo '{"private":true}' > "$dir/package.json"
        npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$pkg@$NODE_MIN_MAJOR" >&2 ||
            die "npm install $pkg@$NODE_MIN_MAJOR failed"
        [ -x "$NODE" ] || die "$NODE missing after install"
    fi
}

install_harness() {
    find_node
    if [ ! -f "$HARNESS_JS" ]; then
        command -v npm >/dev/null 2>&1 || die "npm is needed to install the harness"
        log "run.sh: installing @modelcontextprotocol/conformance@$CONF_VERSION into $HARNESS_DIR"
        mkdir -p "$HARNESS_DIR"
        [ -f "$HARNESS_DIR/package.json" ] || echo '{"private":true}' > "$HARNESS_DIR/package.json"
        # PATH: let npm see the Node >= 22 we use (avoids engine warnings only).
        PATH="$(dirname "$NODE"):$PATH" npm install --prefix "$HARNESS_DIR" --no-audit --no-fund \
            --loglevel=error "@modelcontextprotocol/conformance@$CONF_VERSION" >&2 ||
            die "npm install @modelcontextprotocol/conformance@$CONF_VERSION failed"
        [ -f "$HARNESS_JS" ] || die "$HARNESS_JS missing after install"
    fi
}

harness() { "$NODE" "$HARNESS_JS" "$@"; }

url_answers() { # any HTTP status counts: the server is listening
    if command -v curl >/dev/null 2>&1; then
        local code
        code="$(curl -s -o /dev/null -m 2 -w '%{http_code}' "$1" 2>/dev/null)"
        [ -n "$code" ] && [ "$code" != "000" ]
    else
        "$NODE" -e 'fetch(process.argv[1],{signal:AbortSignal.timeout(2000)}).then(()=>process.exit(0),()=>process.exit(1))' "$1"
    fi
}

wait_for_url() { # URL SECONDS [PID]
    local url="$1" deadline=$((SECONDS + $2)) pid="${3:-}"
    while ! url_answers "$url"; do
        if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
            log "run.sh: server process $pid exited before $url answered"; return 1
        fi
        [ "$SECONDS" -ge "$deadline" ] && { log "run.sh: $url did not answer within $2 s"; return 1; }
        sleep 0.5
    done
}

# --- argument helpers -------------------------------------------------------
has_opt() { # NAME ARGS... : is --NAME or --NAME=... among ARGS?
    local name="$1" a; shift
    for a in "$@"; do
        case "$a" in "$name" | "$name"=*) return 0 ;; esac
    done
    return 1
}
opt_value() { # NAME ARGS... : print value of --NAME
    local name="$1" next=0 a; shift
    for a in "$@"; do
        if [ "$next" = 1 ]; then printf '%s' "$a"; return 0; fi
        case "$a" in "$name") next=1 ;; "$name"=*) printf '%s' "${a#*=}"; return 0 ;; esac
    done
    return 1
}

# --- summarize a finished run (Node, no other dependency) -----------------------
summarize() { # MODE RUN_DIR LOG HARNESS_RC
    "$NODE" - "$@" <<'JS'
const fs = require('fs'), path = require('path');
const [mode, outDir, logFile, rcStr] = process.argv.slice(2);
const rc = Number(rcStr);
const log = fs.readFileSync(logFile, 'utf8').replace(/\x1b\[[0-9;]*m/g, '');
const lines = log.split(/\r?\n/);
const TS = /-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/;

// checks.json files -> per-scenario status counts
const byDir = {};
(function walk(d) {
  let ents = [];
  try { ents = fs.readdirSync(d, { withFileTypes: true }); } catch { return; }
  for (const e of ents) {
    const p = path.join(d, e.name);
    if (e.isDirectory()) walk(p);
    else if (e.name === 'checks.json') {
      let name = path.relative(outDir, d).split(path.sep).join('/').replace(TS, '');
      if (mode === 'server') name = name.replace(/^server-/, '');
      let checks = [];
      try { checks = JSON.parse(fs.readFileSync(p, 'utf8')); } catch {}
      const c = { SUCCESS: 0, FAILURE: 0, WARNING: 0, SKIPPED: 0, INFO: 0, fails: [] };
      for (const k of checks) {
        c[k.status] = (c[k.status] || 0) + 1;
        if (k.status === 'FAILURE' || k.status === 'WARNING')
          c.fails.push(`${k.status === 'WARNING' ? 'warn ' : ''}${k.id}: ${(k.errorMessage || k.description || '').replace(/\s+/g, ' ')}`);
      }
      byDir[name] = c;
    }
  }
})(outDir);

// harness summary (multi-scenario runs)
const rows = [];
let inSummary = false, notScoredRev = null;
const notScored = {};
for (const l of lines) {
  if (/^=== (SUITE )?SUMMARY ===$/.test(l.trim())) { inSummary = true; continue; }
  let m;
  if (inSummary) {
    if ((m = l.match(/^([✓✗]) (\S+): (\d+) passed, (\d+) failed(?:, (\d+) warnings)?$/))) {
      rows.push({ name: m[2], ok: m[1] === '✓', pass: +m[3], fail: +m[4], warn: m[5] === undefined ? null : +m[5] });
      continue;
    }
    if ((m = l.match(/^- (\S+): skipped$/))) { rows.push({ name: m[1], skipped: true }); continue; }
    if (/^Total: /.test(l)) inSummary = false;
  }
  if ((m = l.match(/^Not scored for (\S+): /))) { notScoredRev = m[1]; continue; }
  if (notScoredRev && (m = l.match(/^  [✓✗] (\S+) \((.+)\)$/))) notScored[m[1]] = m[2];
}
// single-scenario runs print no summary: fall back to checks.json
if (rows.length === 0) {
  const skip = lines.map((l) => l.match(/^SKIPPED: scenario '([^']+)'/)).filter(Boolean);
  for (const s of skip) rows.push({ name: s[1], skipped: true });
  const overallFailed = /OVERALL: FAILED/.test(log);
  for (const [name, c] of Object.entries(byDir)) {
    const ok = mode === 'server' ? c.FAILURE === 0 : c.FAILURE === 0 && c.WARNING === 0 && !overallFailed;
    rows.push({ name, ok, pass: c.SUCCESS, fail: c.FAILURE, warn: c.WARNING });
  }
}
if (rows.length === 0) {
  console.log(log.split(/\r?\n/).slice(-40).join('\n'));
  console.log(`\nrun.sh: no scenario results found (harness exit ${rc}); log: ${logFile}`);
  console.log('0 passed, 0 failed');
  process.exit(rc === 0 ? 2 : rc);
}

const scoredOnly = process.env.CONFORMANCE_SCORED_ONLY === '1';
const w = Math.max(8, ...rows.map((r) => r.name.length));
const pad = (s, n) => String(s).padEnd(n);
console.log(`${pad('SCENARIO', w)}  RESULT  CHECKS pass/fail/warn  NOTE`);
let sp = 0, sf = 0, ss = 0, cp = 0, cf = 0, cw = 0, cs = 0, scp = 0, scf = 0;
const failLines = [];
for (const r of rows) {
  const c = byDir[r.name];
  const note = notScored[r.name] ? `not scored (${notScored[r.name]})` : '';
  if (r.skipped) {
    ss++;
    console.log(`${pad(r.name, w)}  SKIP    ${pad('-', 20)}  ${note || 'not applicable at this spec version'}`);
    continue;
  }
  const warn = r.warn !== null && r.warn !== undefined ? r.warn : c ? c.WARNING : 0;
  cp += r.pass; cf += r.fail; cw += warn; cs += c ? c.SKIPPED : 0;
  const scored = !notScored[r.name];
  if (!scoredOnly || scored) { if (r.ok) sp++; else sf++; }
  if (scored && notScoredRev) { if (r.ok) scp++; else scf++; }
  console.log(`${pad(r.name, w)}  ${r.ok ? 'PASS' : 'FAIL'}    ${pad(`${r.pass}/${r.fail}/${warn}`, 20)}  ${note}`);
  if (c && c.fails.length) failLines.push(`  ${r.name}:`, ...c.fails.slice(0, 8).map((f) => `    - ${f.slice(0, 220)}`),
    ...(c.fails.length > 8 ? [`    ... ${c.fails.length - 8} more (see checks.json)`] : []));
}
if (failLines.length) { console.log('\nfailing / warning checks:'); console.log(failLines.join('\n')); }
console.log('');
console.log(`checks: ${cp} passed, ${cf} failed, ${cw} warnings, ${cs} skipped`);
if (ss) console.log(`scenarios skipped (not applicable): ${ss}`);
if (notScoredRev) console.log(`scored for requirements ${notScoredRev}: ${scp} passed, ${scf} failed (${Object.keys(notScored).length} more run but not scored)`);
console.log(`harness exit code: ${rc}; results: ${outDir}`);
console.log(`${sp} passed, ${sf} failed`);
JS
}

run_leg() { # MODE TARGET ARGS...
    local mode="$1" target="$2"; shift 2
    local -a args=("$@")
    if ! has_opt --scenario "${args[@]}" && ! has_opt --suite "${args[@]}" &&
        ! has_opt --requirements "${args[@]}"; then
        if has_opt --spec-version "${args[@]}"; then
            [ "$mode" = client ] && args+=(--suite all)
        else
            args+=(--requirements 2026-07-28)
        fi
    fi
    if [ "$mode" = client ] && ! has_opt --timeout "${args[@]}"; then args+=(--timeout 60000); fi
    local out
    if out="$(opt_value --output-dir "${args[@]}")" || out="$(opt_value -o "${args[@]}")"; then
        :
    else
        out="$RESULTS_ROOT/$mode-$(date +%Y%m%dT%H%M%S)-$$"
        args+=(--output-dir "$out")
    fi
    mkdir -p "$out" || die "cannot create $out"
    local logf="$out/harness.log" rc
    local -a cmd
    if [ "$mode" = server ]; then cmd=(server --url "$target" "${args[@]}")
    else cmd=(client --command "$target" "${args[@]}"); fi
    log "run.sh: harness $CONF_VERSION, node $("$NODE" --version): ${cmd[*]}"
    if [ "${CONFORMANCE_VERBOSE:-0}" = 1 ]; then
        harness "${cmd[@]}" 2>&1 | tee "$logf" >&2; rc=${PIPESTATUS[0]}
    else
        harness "${cmd[@]}" >"$logf" 2>&1; rc=$?
    fi
    summarize "$mode" "$out" "$logf" "$rc"
    local src=$?
    [ "$src" -ne 0 ] && [ "$rc" -eq 0 ] && return "$src"
    return "$rc"
}

SERVER_PID=""
stop_server() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM -- "-$SERVER_PID" 2>/dev/null || kill -TERM "$SERVER_PID" 2>/dev/null
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.5; done
        kill -KILL -- "-$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=""
}

main() {
    local sub="${1:-}"; [ $# -gt 0 ] && shift
    case "$sub" in
    server)
        [ $# -ge 1 ] || die "usage: run.sh server URL [harness args...]"
        local url="$1"; shift
        install_harness
        wait_for_url "$url" "$WAIT_S" || die "server at $url is not reachable"
        run_leg server "$url" "$@"
        ;;
    server-cmd)
        [ $# -ge 2 ] || die "usage: run.sh server-cmd 'SERVER COMMAND' URL [harness args...]"
        local scmd="$1" url="$2"; shift 2
        install_harness
        url_answers "$url" && die "something already answers at $url; stop it or choose another port"
        mkdir -p "$RESULTS_ROOT"
        local slog
        slog="$RESULTS_ROOT/server-cmd-$(date +%Y%m%dT%H%M%S)-$$.log"
        setsid bash -c "$scmd" >"$slog" 2>&1 </dev/null &
        SERVER_PID=$!
        trap stop_server EXIT INT TERM
        log "run.sh: started server (pid/pgid $SERVER_PID), log $slog"
        if ! wait_for_url "$url" "$WAIT_S" "$SERVER_PID"; then
            tail -20 "$slog" >&2; stop_server; die "server did not come up"
        fi
        local rc=0
        run_leg server "$url" "$@" || rc=$?
        stop_server
        return "$rc"
        ;;
    client)
        [ $# -ge 1 ] || die "usage: run.sh client 'CLIENT COMMAND' [harness args...]"
        local ccmd="$1"; shift
        install_harness
        run_leg client "$ccmd" "$@"
        ;;
    list) install_harness; harness list "$@" ;;
    harness) install_harness; harness "$@" ;;
    install) install_harness; log "harness: $HARNESS_JS"; log "node: $NODE ($("$NODE" --version))" ;;
    source)
        install_harness
        local pdir="$CACHE/prettier" outf="$HARNESS_DIR/index.pretty.js"
        if [ ! -f "$outf" ]; then
            [ -x "$pdir/node_modules/.bin/prettier" ] || {
                mkdir -p "$pdir" && { [ -f "$pdir/package.json" ] || echo '{"private":true}' >"$pdir/package.json"; } &&
                    npm install --prefix "$pdir" --no-audit --no-fund --loglevel=error prettier@3 >&2; } ||
                die "npm install prettier failed"
            "$NODE" "$pdir/node_modules/prettier/bin/prettier.cjs" --parser babel <"$HARNESS_JS" >"$outf" ||
                die "prettier failed"
        fi
        printf '%s\n' "$outf"
        ;;
    server-legs) exec bash "$(dirname "${BASH_SOURCE[0]}")/run_server_legs.sh" "$@" ;;
    -h | --help | help | "") usage ;;
    *) die "unknown subcommand '$sub' (see --help)" ;;
    esac
}

main "$@"
