#!/usr/bin/env bash
# conformance/run_client_leg.sh [REV] - mcpkit's client conformance leg (REV: 2026-07-28, the
# default, or 2025-11-25).
#
# Runs the official harness (via conformance/run.sh, which installs Node 22 + the harness
# from npm and caches them) in client mode: for each client scenario the harness starts a
# mock server and runs `$PYTHON conformance/client.py <mock-url>`:
#
#   requirements   --requirements $REV
#                  --expected-failures conformance/baseline-client-$REV.yml
#
# then the skills extension's client scenarios (SKILLS_SCENARIOS: sep-2640-client-no-prefetch,
# -verify-digest, -verify-size, -verify-frontmatter), each alone with --scenario: each must pass
# with no check skipped and none warning.
#
# All scenarios run concurrently (25-70 s on 2 cores); run.sh's default client timeout
# (60 s per scenario) applies. Exit status: the harness's (0 only if every scored scenario
# passed or is listed in the baseline, and no baseline entry now passes); 2 if nothing ran.
#
# Usage: conformance/run_client_leg.sh [extra harness args...]
# Environment:
#   PYTHON   interpreter for conformance/client.py (default: python)
#   everything conformance/run.sh reads (CONFORMANCE_CACHE, CONFORMANCE_RESULTS, ...)
# If $PYTHON cannot import mcpkit, the repository root is put on PYTHONPATH.
set -uo pipefail

REV=2026-07-28
case "${1:-}" in 20[0-9][0-9]-*) REV="$1"; shift ;; esac

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
PYTHON="${PYTHON:-python}"
RUN="$HERE/run.sh"
RESULTS_ROOT="${CONFORMANCE_RESULTS:-${TMPDIR:-/tmp}/mcp-conformance-results}"
export CONFORMANCE_RESULTS="$RESULTS_ROOT"

log() { printf 'run_client_leg.sh: %s\n' "$*" >&2; }

case "${1:-}" in -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;; esac

PYBIN="$(command -v "$PYTHON" 2>/dev/null)" || { log "interpreter '$PYTHON' not found (set PYTHON)"; exit 2; }
if ! (cd / && "$PYBIN" -c 'import mcpkit') >/dev/null 2>&1; then
    export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
fi

bash "$RUN" install || exit 2

# The harness splits the command on spaces: keep paths space-free (they are absolute here).
case "$PYBIN$HERE" in *' '*) log "paths with spaces are not supported: $PYBIN $HERE"; exit 2 ;; esac
CMD="$PYBIN $HERE/client.py"

mkdir -p "$RESULTS_ROOT"
out="$RESULTS_ROOT/client-requirements-$(date +%Y%m%dT%H%M%S)-$$"
printf '===== client leg: %s =====\n' "--requirements $REV --expected-failures $HERE/baseline-client-$REV.yml $*"
bash "$RUN" client "$CMD" --requirements $REV \
    --expected-failures "$HERE/baseline-client-$REV.yml" --output-dir "$out" "$@"
rc=$?
if [ -f "$out/harness.log" ]; then
    # With a baseline the harness prints no "not scored" list: count the scored ones here.
    bash "$RUN" list --requirements $REV 2>/dev/null |
        awk '/^Client scenarios/ {f = 1; next} /^[^ ]/ {f = 0} f && /^  - / {print $2}' >"$out/required.txt"
    sed 's/\x1b\[[0-9;]*m//g' "$out/harness.log" | awk -v req="$out/required.txt" -v rev="$REV" '
        BEGIN { while ((getline l < req) > 0) { r[l] = 1; k++ } }
        / passed, [0-9]+ failed/ && ($1 == "✓" || $1 == "✗") {
            n = $2; sub(/:$/, "", n); if (n in r) { if ($1 == "✓") p++; else f++ } }
        END { printf "scored for requirements %s: %d passed, %d failed (of %d required)\n", rev, p, f, k }'
    # The harness's baseline verdict (expected / unexpected failures, stale entries).
    sed 's/\x1b\[[0-9;]*m//g' "$out/harness.log" |
        sed -n '/^Expected failures (in baseline)\|^Unexpected failures\|^Stale baseline/,$p'
fi

SKILLS_SCENARIOS=(sep-2640-client-no-prefetch sep-2640-client-verify-digest sep-2640-client-verify-size
                  sep-2640-client-verify-frontmatter)
printf '===== client leg, skills: --scenario each of %s =====\n' "${SKILLS_SCENARIOS[*]}"
skills_rc=0
for scenario in "${SKILLS_SCENARIOS[@]}"; do
    sout="$out-$scenario"
    bash "$RUN" client "$CMD" --scenario "$scenario" --output-dir "$sout" >"$sout.out" 2>&1
    src=$?
    grep -E '^(sep-|checks:|harness exit)' "$sout.out"
    if [ "$src" -ne 0 ] || ! grep -q '^checks: [0-9]* passed, 0 failed, 0 warnings, 0 skipped' "$sout.out"; then
        log "$scenario: failed, or a check failed, warned or was skipped ($sout.out)"; skills_rc=1
    fi
done
printf '===== client leg, skills: exit %s =====\n' "$skills_rc"
[ "$rc" -eq 0 ] && rc=$skills_rc
printf '===== client leg: exit %s =====\n' "$rc"
exit "$rc"
