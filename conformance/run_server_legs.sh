#!/usr/bin/env bash
# conformance/run_server_legs.sh - mcpkit's server conformance legs.
#
# Starts conformance/everything_server.py (interpreter: $PYTHON, default `python`) on a
# free port, serving http://127.0.0.1:PORT/mcp, and runs the official harness
# (via conformance/run.sh, which installs Node 22 + the harness from npm and caches them):
#
#   requirements   --requirements 2026-07-28
#                  --expected-failures conformance/baseline-server-2026-07-28.yml
#   suite          --suite all --spec-version 2026-07-28
#                  --expected-failures conformance/baseline-server-suite-2026-07-28.yml
#   legacy-requirements / legacy-suite   the same at 2025-11-25
#   skills         --scenario S for each of the extension scenarios in SKILLS_SCENARIOS
#                  (sep-2640-skills-enumeration, -manifest, -directory); the leg fails if a
#                  scenario fails or if any of its checks is skipped or warns
#
# then stops the server. Exit status: 0 only if every leg passed against its baseline
# (a failure not in the baseline, or a baseline entry that now passes, fails the leg).
#
# Usage: conformance/run_server_legs.sh [requirements|suite ...] [-- extra harness args]
#   (no leg names: both legs)
# Environment:
#   PYTHON            interpreter for the server (default: python)
#   CONFORMANCE_PORT  port to use (default: a free port chosen by the OS)
#   CONFORMANCE_SERVER_LOG  server log file (default: under $CONFORMANCE_RESULTS)
#   CONFORMANCE_VIA_PROXY  1: the fixture serves another port, and the legs run against
#                     `mcpkit proxy --http URL` in front of it (the proxy's log follows the server's)
#   CONFORMANCE_BACKEND_ERA  with CONFORMANCE_VIA_PROXY=1: the era the fixture behind the proxy
#                     serves: both (default), modern (legacy=False) or legacy (2025-11-25 only;
#                     the 2026-07-28 legs then use baseline-proxy-legacy-backend-2026-07-28.yml:
#                     what the 2025-11-25 wire cannot carry)
#   everything conformance/run.sh reads (CONFORMANCE_CACHE, CONFORMANCE_RESULTS, ...)
# If $PYTHON cannot import mcpkit, the repository root is put on PYTHONPATH.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
PYTHON="${PYTHON:-python}"
RUN="$HERE/run.sh"
RESULTS_ROOT="${CONFORMANCE_RESULTS:-${TMPDIR:-/tmp}/mcp-conformance-results}"
export CONFORMANCE_RESULTS="$RESULTS_ROOT"

log() { printf 'run_server_legs.sh: %s\n' "$*" >&2; }

legs=()
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
    requirements | suite | legacy-requirements | legacy-suite | skills) legs+=("$1") ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) log "unknown argument '$1' (legs: requirements, suite; extra harness args after --)"; exit 2 ;;
    esac
    shift
done
[ ${#legs[@]} -eq 0 ] && legs=(requirements suite legacy-requirements legacy-suite skills)
SKILLS_SCENARIOS=(sep-2640-skills-enumeration sep-2640-skills-manifest sep-2640-skills-directory)

command -v "$PYTHON" >/dev/null 2>&1 || { log "interpreter '$PYTHON' not found (set PYTHON)"; exit 2; }
if ! (cd / && "$PYTHON" -c 'import mcpkit') >/dev/null 2>&1; then
    export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
fi

bash "$RUN" install || exit 2

PORT="${CONFORMANCE_PORT:-$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')}"
URL="http://127.0.0.1:$PORT/mcp"
mkdir -p "$RESULTS_ROOT"
SLOG="${CONFORMANCE_SERVER_LOG:-$RESULTS_ROOT/everything-server-$(date +%Y%m%dT%H%M%S)-$$.log}"

SERVER_PID=""
BACK_PID=""
stop_server() {
    if [ -n "$BACK_PID" ] && kill -0 "$BACK_PID" 2>/dev/null; then
        kill -TERM -- "-$BACK_PID" 2>/dev/null || kill -TERM "$BACK_PID" 2>/dev/null
    fi
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        # The server runs in its own process group (setsid): stop exactly that group.
        kill -TERM -- "-$SERVER_PID" 2>/dev/null || kill -TERM "$SERVER_PID" 2>/dev/null
        for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.5; done
        kill -KILL -- "-$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    SERVER_PID=""
}
trap stop_server EXIT
trap 'stop_server; exit 130' INT TERM

if [ "${CONFORMANCE_VIA_PROXY:-0}" = 1 ]; then
    BACK_PORT="$("$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
    BACK_ERA="${CONFORMANCE_BACKEND_ERA:-both}"
    setsid "$PYTHON" "$HERE/everything_server.py" --host 127.0.0.1 --port "$BACK_PORT" --era "$BACK_ERA" \
        >"$SLOG" 2>&1 </dev/null &
    BACK_PID=$!
    log "started everything_server.py --era $BACK_ERA (pid/pgid $BACK_PID) at port $BACK_PORT, behind the proxy"
    for _ in $(seq 1 60); do
        "$PYTHON" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$BACK_PORT" \
            2>/dev/null && break
        sleep 0.3
    done
    setsid "$PYTHON" -m mcpkit proxy --http --port "$PORT" "http://127.0.0.1:$BACK_PORT/mcp" >>"$SLOG" 2>&1 </dev/null &
    SERVER_PID=$!
    log "started mcpkit proxy (pid/pgid $SERVER_PID) at $URL; log $SLOG"
else
    setsid "$PYTHON" "$HERE/everything_server.py" --host 127.0.0.1 --port "$PORT" >"$SLOG" 2>&1 </dev/null &
    SERVER_PID=$!
    log "started everything_server.py (pid/pgid $SERVER_PID) at $URL; log $SLOG"
fi

# Wait until the endpoint answers (any HTTP status) or the server dies.
deadline=$((SECONDS + ${CONFORMANCE_WAIT_S:-30}))
# (any HTTP answer counts; the check uses the server's own interpreter, so curl is not needed)
answers() { "$PYTHON" -c 'import sys, urllib.request as u, urllib.error as e
try: u.urlopen(sys.argv[1], timeout=2)
except e.HTTPError: pass
except OSError: sys.exit(1)' "$URL" 2>/dev/null; }
until answers; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        log "server exited before $URL answered:"; tail -30 "$SLOG" >&2; exit 2
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
        log "$URL did not answer within ${CONFORMANCE_WAIT_S:-30} s"; tail -30 "$SLOG" >&2; exit 2
    fi
    sleep 0.3
done

# One extension scenario, run alone: it must pass with no check skipped and none warning.
run_scenario_strict() {
    local scenario="$1" out="$2" log
    log="$out.out"
    bash "$RUN" server "$URL" --scenario "$scenario" --output-dir "$out" ${extra[@]+"${extra[@]}"} >"$log" 2>&1
    local rc=$?
    grep -E '^(sep-|checks:|harness exit)' "$log"
    if [ "$rc" -ne 0 ]; then return 1; fi
    grep -q '^checks: [0-9]* passed, 0 failed, 0 warnings, 0 skipped' "$log" || {
        log "$scenario: a check failed, warned or was skipped"; return 1; }
}

failed=()
PROXY_LEGACY_BASELINE=""
if [ "${CONFORMANCE_VIA_PROXY:-0}" = 1 ] && [ "${CONFORMANCE_BACKEND_ERA:-both}" = legacy ]; then
    PROXY_LEGACY_BASELINE="$HERE/baseline-proxy-legacy-backend-2026-07-28.yml"
fi
for leg in "${legs[@]}"; do
    if [ "$leg" = skills ]; then
        printf '\n===== leg skills: --scenario each of %s =====\n' "${SKILLS_SCENARIOS[*]}"
        rc=0
        out="$RESULTS_ROOT/server-skills-$(date +%Y%m%dT%H%M%S)-$$"
        mkdir -p "$out"
        for scenario in "${SKILLS_SCENARIOS[@]}"; do
            if ! kill -0 "$SERVER_PID" 2>/dev/null; then
                log "server died before $scenario"; tail -30 "$SLOG" >&2; rc=1; break
            fi
            run_scenario_strict "$scenario" "$out/$scenario" || rc=1
        done
        [ "$rc" -ne 0 ] && failed+=("$leg")
        printf '===== leg skills: exit %s =====\n' "$rc"
        continue
    fi
    case "$leg" in
    requirements) rev=2026-07-28; args=(--requirements 2026-07-28 --expected-failures "$HERE/baseline-server-2026-07-28.yml") ;;
    suite) rev=2026-07-28; args=(--suite all --spec-version 2026-07-28 --expected-failures "$HERE/baseline-server-suite-2026-07-28.yml") ;;
    legacy-requirements) rev=2025-11-25; args=(--requirements 2025-11-25 --expected-failures "$HERE/baseline-server-2025-11-25.yml") ;;
    legacy-suite) rev=2025-11-25; args=(--suite all --spec-version 2025-11-25 --expected-failures "$HERE/baseline-server-suite-2025-11-25.yml") ;;
    esac
    if [ -n "$PROXY_LEGACY_BASELINE" ] && [ "$rev" = 2026-07-28 ]; then
        args[${#args[@]}-1]="$PROXY_LEGACY_BASELINE"  # the --expected-failures file
    fi
    printf '\n===== leg %s: %s =====\n' "$leg" "${args[*]} ${extra[*]:-}"
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        log "server died before leg $leg"; tail -30 "$SLOG" >&2; failed+=("$leg"); continue
    fi
    out="$RESULTS_ROOT/server-$leg-$(date +%Y%m%dT%H%M%S)-$$"
    bash "$RUN" server "$URL" "${args[@]}" --output-dir "$out" ${extra[@]+"${extra[@]}"}
    rc=$?
    if [ "${leg#legacy-}" = requirements ] && [ -f "$out/harness.log" ]; then
        # With a baseline the harness prints no "not scored" list: count the scored ones here.
        bash "$RUN" list --requirements "$rev" 2>/dev/null |
            awk '/^Server scenarios/ {f = 1; next} /^[^ ]/ {f = 0} f && /^  - / {print $2}' >"$out/required.txt"
        sed 's/\x1b\[[0-9;]*m//g' "$out/harness.log" | awk -v req="$out/required.txt" -v rev="$rev" '
            BEGIN { while ((getline l < req) > 0) { r[l] = 1; k++ } }
            / passed, [0-9]+ failed/ && ($1 == "✓" || $1 == "✗") {
                n = $2; sub(/:$/, "", n); if (n in r) { if ($1 == "✓") p++; else f++ } }
            END { printf "scored for requirements %s: %d passed, %d failed (of %d required)\n", rev, p, f, k }'
    fi
    # The harness's baseline verdict (expected / unexpected failures, stale entries) is in its log.
    [ -f "$out/harness.log" ] &&
        sed 's/\x1b\[[0-9;]*m//g' "$out/harness.log" |
        sed -n '/^Expected failures (in baseline)\|^Unexpected failures\|^Stale baseline/,$p'
    [ "$rc" -ne 0 ] && failed+=("$leg")
    printf '===== leg %s: exit %s =====\n' "$leg" "$rc"
done

stop_server
if [ ${#failed[@]} -gt 0 ]; then
    log "FAILED legs: ${failed[*]} (server log: $SLOG)"
    exit 1
fi
log "all legs passed against their baselines"
exit 0
