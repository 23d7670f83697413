#!/usr/bin/env bash
# install_peers.sh - install the real MCP peer clients used by tests/test_interop.py:
#
#   * the official Python SDK, PyPI mcp==$MCP_PY_VERSION, in its own venv
#     (it brings pydantic, httpx, ... which must not leak into mcpkit's environment);
#   * the official TypeScript SDK v2 client, npm @modelcontextprotocol/client@$MCP_TS_VERSION,
#     installed with `npm install --prefix`, plus a Node.js new enough for it: the `node` on
#     PATH when it satisfies the package's "engines", else npm's node-linux-<arch>@22;
#   * (only when asked for, see below) the MCP Inspector, npm
#     @modelcontextprotocol/inspector@$MCP_INSPECTOR_VERSION (used by tests/test_inspector.py),
#     installed the same way, with a Node.js satisfying its "engines" (>=22.19.0): the one
#     chosen above, or the `node` on PATH, when new enough, else npm's node-linux-<arch>@22;
#   * (only when asked for) `ts-v1`: the TypeScript SDK v1, npm @modelcontextprotocol/sdk@$MCP_TS_V1_VERSION
#     (a legacy-only, 2025-11-25 client; used by tests/test_legacy_peers.py), in its own prefix;
#   * (only when asked for) `everything` (alias `server-everything`): the reference server, npm
#     @modelcontextprotocol/server-everything@$MCP_EVERYTHING_VERSION, in its own prefix (it pins
#     its own SDK v1, which must not be shared with the `ts-v1` peer).
#     Both get a Node.js satisfying their "engines" the same way as the Inspector.
#
# Arguments name the peers to install: any of `python`, `typescript`, `inspector`, `ts-v1`,
# `everything`, or `all`. Without arguments: `python typescript` (what tests/test_interop.py uses).
#
# Idempotent and cached: a finished install leaves a stamp and is not redone. Progress goes
# to stderr (only when something is installed); stdout is KEY=VALUE lines saying where:
#
#   PEERS_DIR=...          the install root (default: tests/.peers beside this repo; it
#                          gets a .gitignore of "*")
#   PEER_PYTHON=...        the python of the venv holding mcp
#   PEER_NODE=...          the node binary to run the TypeScript peer with
#   PEER_NODE_PREFIX=...   the npm prefix holding node_modules/@modelcontextprotocol/client
#   PEER_INSPECTOR_NODE=...    (inspector) the node binary to run the Inspector with
#   PEER_INSPECTOR_PREFIX=...  (inspector) the npm prefix holding node_modules/@modelcontextprotocol/inspector
#   PEER_INSPECTOR_CLI=...     (inspector) its launcher script: `$PEER_INSPECTOR_NODE $PEER_INSPECTOR_CLI --cli ...`
#   PEER_TS_V1_NODE=...        (ts-v1) the node binary to run the SDK v1 client with
#   PEER_TS_V1_PREFIX=...      (ts-v1) the npm prefix holding node_modules/@modelcontextprotocol/sdk
#   PEER_EVERYTHING_NODE=...   (everything) the node binary to run server-everything with
#   PEER_EVERYTHING_PREFIX=... (everything) the npm prefix holding node_modules/@modelcontextprotocol/server-everything
#   PEER_EVERYTHING_BIN=...    (everything) its entry script: `$PEER_EVERYTHING_NODE $PEER_EVERYTHING_BIN stdio`
#
# (PEER_PYTHON is printed when `python` is installed; PEER_NODE and PEER_NODE_PREFIX when
# `typescript` is.)
#
# Environment: MCPKIT_PEERS_DIR (install root), MCPKIT_PEER_PYTHON (interpreter that makes
# the venv, default python3), MCPKIT_PEER_NODE (node binary to use, skips the Node check).
# Exit status: 0 when the peers asked for are ready; non-zero with a message on stderr
# otherwise (e.g. a package registry is unreachable).
set -euo pipefail

MCP_PY_VERSION=2.3.0
MCP_TS_VERSION=2.4.0
MCP_INSPECTOR_VERSION=2.12.0
MCP_TS_V1_VERSION=1.32.2
MCP_EVERYTHING_VERSION=2026.8.31
NODE_FALLBACK_MAJOR=22

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
PEERS="${MCPKIT_PEERS_DIR:-$root/tests/.peers}"

log() { printf 'install_peers: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

WANT_PYTHON=0 WANT_TS=0 WANT_INSPECTOR=0 WANT_TS_V1=0 WANT_EVERYTHING=0
[ "$#" -gt 0 ] || set -- python typescript
for peer in "$@"; do
    case "$peer" in
        python) WANT_PYTHON=1 ;;
        typescript) WANT_TS=1 ;;
        inspector) WANT_INSPECTOR=1 ;;
        ts-v1) WANT_TS_V1=1 ;;
        everything | server-everything) WANT_EVERYTHING=1 ;;
        all) WANT_PYTHON=1 WANT_TS=1 WANT_INSPECTOR=1 WANT_TS_V1=1 WANT_EVERYTHING=1 ;;
        *) die "unknown peer '$peer' (expected python, typescript, inspector, ts-v1, everything or all)" ;;
    esac
done

mkdir -p "$PEERS"
[ -f "$PEERS/.gitignore" ] || printf '*\n' > "$PEERS/.gitignore"

# One installer at a time (two test sessions may start together).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$PEERS/.install.lock"
    flock -w 600 9 || die "timed out waiting for another install_peers.sh"
fi

# ---------------------------------------------------------------- Python SDK (PyPI mcp)
VENV="$PEERS/venv-mcp"
PY_STAMP="$VENV/.peer-stamp"
PEER_PYTHON="$VENV/bin/python"
if [ "$WANT_PYTHON" = 1 ] && { [ "$(cat "$PY_STAMP" 2>/dev/null)" != "mcp==$MCP_PY_VERSION" ] || [ ! -x "$PEER_PYTHON" ]; }; then
    base="${MCPKIT_PEER_PYTHON:-python3}"
    command -v "$base" >/dev/null 2>&1 || die "no '$base' to create the peer venv with"
    log "installing mcp==$MCP_PY_VERSION (PyPI) into its own venv $VENV"
    rm -rf "$VENV"
    "$base" -m venv "$VENV" || die "could not create the venv $VENV with $base"
    start=$SECONDS
    if ! "$PEER_PYTHON" -m pip install -q --disable-pip-version-check --no-input \
            --timeout 30 --retries 2 "mcp==$MCP_PY_VERSION" 2> "$PEERS/pip.log"; then
        grep -v "^WARNING: Location" "$PEERS/pip.log" | tail -15 >&2 || true
        rm -rf "$VENV"
        die "pip install mcp==$MCP_PY_VERSION failed (is PyPI reachable?); see above"
    fi
    "$PEER_PYTHON" -c "import mcp.client; from importlib.metadata import version; assert version('mcp') == '$MCP_PY_VERSION', version('mcp')" ||
        die "mcp==$MCP_PY_VERSION installed but does not import"
    printf 'mcp==%s' "$MCP_PY_VERSION" > "$PY_STAMP"
    log "mcp==$MCP_PY_VERSION ready in $((SECONDS - start)) s"
fi

# ------------------------------------------------ TypeScript SDK v2 (npm @modelcontextprotocol/client)
NODE_PREFIX="$PEERS/node"
TS_PKG="$NODE_PREFIX/node_modules/@modelcontextprotocol/client/package.json"
TS_STAMP="$NODE_PREFIX/.peer-stamp"

node_major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }
# node_at_least NODE X.Y.Z: does that node binary run Node.js >= X.Y.Z?
node_at_least() {
    [ -n "$1" ] && [ -x "$1" ] || return 1
    "$1" -e 'const w = process.argv[1].split(".").map(Number), h = process.versions.node.split(".").map(Number);
             for (let i = 0; i < 3; i++) { if ((h[i] || 0) !== (w[i] || 0)) process.exit((h[i] || 0) > (w[i] || 0) ? 0 : 1); }' \
        "$2" >/dev/null 2>&1
}
# The fallback Node.js: npm's node-linux-<arch>@NODE_FALLBACK_MAJOR, installed in $PEERS/node<major>.
fallback_node_path() {
    local arch
    case "$(uname -m)" in
        x86_64 | amd64) arch=x64 ;;
        aarch64 | arm64) arch=arm64 ;;
        *) return 1 ;;
    esac
    printf '%s/node%s/node_modules/node-linux-%s/bin/node' "$PEERS" "$NODE_FALLBACK_MAJOR" "$arch"
}

if [ "$WANT_TS" = 1 ]; then
if [ "$(cat "$TS_STAMP" 2>/dev/null)" != "@modelcontextprotocol/client@$MCP_TS_VERSION" ] || [ ! -f "$TS_PKG" ]; then
    command -v npm >/dev/null 2>&1 ||
        die "npm is needed to install @modelcontextprotocol/client (Debian: apt-get install nodejs npm)"
    log "installing @modelcontextprotocol/client@$MCP_TS_VERSION (npm) into $NODE_PREFIX"
    mkdir -p "$NODE_PREFIX"
    [ -f "$NODE_PREFIX/package.json" ] || printf '{"private": true}\n' > "$NODE_PREFIX/package.json"
    start=$SECONDS
    npm install --prefix "$NODE_PREFIX" --no-audit --no-fund --no-update-notifier --loglevel=error \
        --fetch-retries=2 --fetch-timeout=30000 --engine-strict=false \
        "@modelcontextprotocol/client@$MCP_TS_VERSION" >&2 ||
        die "npm install @modelcontextprotocol/client@$MCP_TS_VERSION failed (is the npm registry reachable?)"
    [ -f "$TS_PKG" ] || die "$TS_PKG missing after npm install"
    printf '@modelcontextprotocol/client@%s' "$MCP_TS_VERSION" > "$TS_STAMP"
    log "@modelcontextprotocol/client@$MCP_TS_VERSION ready in $((SECONDS - start)) s"
fi

# The Node.js the package asks for: "engines": {"node": ">=N"}.
need_major="$(sed -n 's/.*"node" *: *"[^0-9]*\([0-9][0-9]*\).*/\1/p' "$TS_PKG" | head -1)"
need_major="${need_major:-$NODE_FALLBACK_MAJOR}"

if [ -n "${MCPKIT_PEER_NODE:-}" ]; then
    PEER_NODE="$MCPKIT_PEER_NODE"
    [ -x "$PEER_NODE" ] || die "MCPKIT_PEER_NODE=$PEER_NODE is not executable"
elif command -v node >/dev/null 2>&1 && [ "$(node_major node)" -ge "$need_major" ]; then
    PEER_NODE="$(command -v node)"
else
    case "$(uname -m)" in
        x86_64 | amd64) arch=x64 ;;
        aarch64 | arm64) arch=arm64 ;;
        *) die "no Node.js >= $need_major on PATH and no npm node package for $(uname -m)" ;;
    esac
    pkg="node-linux-$arch"
    NODE_DIR="$PEERS/node$NODE_FALLBACK_MAJOR"
    PEER_NODE="$NODE_DIR/node_modules/$pkg/bin/node"
    if [ ! -x "$PEER_NODE" ] || [ "$(node_major "$PEER_NODE")" -lt "$need_major" ]; then
        command -v npm >/dev/null 2>&1 || die "npm is needed to install $pkg@$NODE_FALLBACK_MAJOR"
        log "Node.js >= $need_major needed: installing $pkg@$NODE_FALLBACK_MAJOR (npm) into $NODE_DIR"
        mkdir -p "$NODE_DIR"
        [ -f "$NODE_DIR/package.json" ] || printf '{"private": true}\n' > "$NODE_DIR/package.json"
        npm install --prefix "$NODE_DIR" --no-audit --no-fund --no-update-notifier --loglevel=error \
            --fetch-retries=2 --fetch-timeout=30000 "$pkg@$NODE_FALLBACK_MAJOR" >&2 ||
            die "npm install $pkg@$NODE_FALLBACK_MAJOR failed (is the npm registry reachable?)"
        [ -x "$PEER_NODE" ] || die "$PEER_NODE missing after install"
    fi
fi
[ "$(node_major "$PEER_NODE")" -ge "$need_major" ] ||
    die "$PEER_NODE is Node.js $(node_major "$PEER_NODE"); @modelcontextprotocol/client@$MCP_TS_VERSION needs >= $need_major"
fi  # WANT_TS

# ----------------------------------------------- MCP Inspector (npm @modelcontextprotocol/inspector)
INSPECTOR_PREFIX="$PEERS/inspector"
INSPECTOR_DIR="$INSPECTOR_PREFIX/node_modules/@modelcontextprotocol/inspector"
INSPECTOR_PKG="$INSPECTOR_DIR/package.json"
INSPECTOR_CLI="$INSPECTOR_DIR/clients/launcher/build/index.js"
INSPECTOR_STAMP="$INSPECTOR_PREFIX/.peer-stamp"
if [ "$WANT_INSPECTOR" = 1 ]; then
    if [ "$(cat "$INSPECTOR_STAMP" 2>/dev/null)" != "@modelcontextprotocol/inspector@$MCP_INSPECTOR_VERSION" ] ||
            [ ! -f "$INSPECTOR_PKG" ] || [ ! -f "$INSPECTOR_CLI" ]; then
        command -v npm >/dev/null 2>&1 ||
            die "npm is needed to install @modelcontextprotocol/inspector (Debian: apt-get install nodejs npm)"
        log "installing @modelcontextprotocol/inspector@$MCP_INSPECTOR_VERSION (npm) into $INSPECTOR_PREFIX"
        mkdir -p "$INSPECTOR_PREFIX"
        [ -f "$INSPECTOR_PREFIX/package.json" ] || printf '{"private": true}\n' > "$INSPECTOR_PREFIX/package.json"
        start=$SECONDS
        # npm itself may run on an older Node.js than the Inspector's "engines": that is fine,
        # the Inspector is run with the Node.js chosen below.
        npm install --prefix "$INSPECTOR_PREFIX" --no-audit --no-fund --no-update-notifier --loglevel=error \
            --fetch-retries=2 --fetch-timeout=30000 --engine-strict=false \
            "@modelcontextprotocol/inspector@$MCP_INSPECTOR_VERSION" >&2 ||
            die "npm install @modelcontextprotocol/inspector@$MCP_INSPECTOR_VERSION failed (is the npm registry reachable?)"
        [ -f "$INSPECTOR_CLI" ] || die "$INSPECTOR_CLI missing after npm install"
        printf '@modelcontextprotocol/inspector@%s' "$MCP_INSPECTOR_VERSION" > "$INSPECTOR_STAMP"
        log "@modelcontextprotocol/inspector@$MCP_INSPECTOR_VERSION ready in $((SECONDS - start)) s"
    fi

    # Its "engines": {"node": ">=X.Y.Z"}.
    inspector_need="$(sed -n 's/.*"node" *: *"[^0-9]*\([0-9][0-9.]*\).*/\1/p' "$INSPECTOR_PKG" | head -1)"
    inspector_need="${inspector_need:-$NODE_FALLBACK_MAJOR}"
    PEER_INSPECTOR_NODE=""
    for candidate in "${MCPKIT_PEER_NODE:-}" "${PEER_NODE:-}" "$(command -v node 2>/dev/null || true)" \
                     "$(fallback_node_path || true)"; do
        if node_at_least "$candidate" "$inspector_need"; then
            PEER_INSPECTOR_NODE="$candidate"
            break
        fi
    done
    if [ -z "$PEER_INSPECTOR_NODE" ]; then
        fallback="$(fallback_node_path)" ||
            die "no Node.js >= $inspector_need found and no npm node package for $(uname -m)"
        pkg="$(basename "$(dirname "$(dirname "$fallback")")")"
        NODE_DIR="$PEERS/node$NODE_FALLBACK_MAJOR"
        command -v npm >/dev/null 2>&1 || die "npm is needed to install $pkg@$NODE_FALLBACK_MAJOR"
        log "Node.js >= $inspector_need needed for the Inspector: installing $pkg@$NODE_FALLBACK_MAJOR (npm) into $NODE_DIR"
        mkdir -p "$NODE_DIR"
        [ -f "$NODE_DIR/package.json" ] || printf '{"private": true}\n' > "$NODE_DIR/package.json"
        npm install --prefix "$NODE_DIR" --no-audit --no-fund --no-update-notifier --loglevel=error \
            --fetch-retries=2 --fetch-timeout=30000 "$pkg@$NODE_FALLBACK_MAJOR" >&2 ||
            die "npm install $pkg@$NODE_FALLBACK_MAJOR failed (is the npm registry reachable?)"
        node_at_least "$fallback" "$inspector_need" ||
            die "$fallback is Node.js $("$fallback" --version 2>/dev/null || echo '?'); the Inspector needs >= $inspector_need"
        PEER_INSPECTOR_NODE="$fallback"
    fi
fi

# ------------------------------------- npm packages in their own prefix: TS SDK v1, server-everything
# npm_peer PKG VERSION PREFIX CHECK_FILE: install PKG@VERSION into PREFIX (cached by a stamp) unless
# done already; CHECK_FILE must exist afterwards.
npm_peer() {
    local pkg="$1" ver="$2" prefix="$3" check="$4" stamp="$3/.peer-stamp" start
    if [ "$(cat "$stamp" 2>/dev/null)" = "$pkg@$ver" ] && [ -f "$check" ]; then
        return 0
    fi
    command -v npm >/dev/null 2>&1 || die "npm is needed to install $pkg (Debian: apt-get install nodejs npm)"
    log "installing $pkg@$ver (npm) into $prefix"
    mkdir -p "$prefix"
    [ -f "$prefix/package.json" ] || printf '{"private": true}\n' > "$prefix/package.json"
    start=$SECONDS
    npm install --prefix "$prefix" --no-audit --no-fund --no-update-notifier --loglevel=error \
        --fetch-retries=2 --fetch-timeout=30000 --engine-strict=false "$pkg@$ver" >&2 ||
        die "npm install $pkg@$ver failed (is the npm registry reachable?)"
    [ -f "$check" ] || die "$check missing after npm install $pkg@$ver"
    printf '%s@%s' "$pkg" "$ver" > "$stamp"
    log "$pkg@$ver ready in $((SECONDS - start)) s"
}

# node_for PKG_JSON: print a node binary satisfying the package's "engines" (>=X[.Y.Z]), installing
# npm's node-linux-<arch>@NODE_FALLBACK_MAJOR when no candidate is new enough.
node_for() {
    local need candidate fallback pkg dir
    need="$(sed -n 's/.*"node" *: *"[^0-9]*\([0-9][0-9.]*\).*/\1/p' "$1" | head -1)"
    need="${need:-18}"
    for candidate in "${MCPKIT_PEER_NODE:-}" "${PEER_NODE:-}" "$(command -v node 2>/dev/null || true)" \
                     "$(fallback_node_path || true)"; do
        if node_at_least "$candidate" "$need"; then
            printf '%s' "$candidate"
            return 0
        fi
    done
    fallback="$(fallback_node_path)" || die "no Node.js >= $need found and no npm node package for $(uname -m)"
    pkg="$(basename "$(dirname "$(dirname "$fallback")")")"
    dir="$PEERS/node$NODE_FALLBACK_MAJOR"
    command -v npm >/dev/null 2>&1 || die "npm is needed to install $pkg@$NODE_FALLBACK_MAJOR"
    log "Node.js >= $need needed for $1: installing $pkg@$NODE_FALLBACK_MAJOR (npm) into $dir"
    mkdir -p "$dir"
    [ -f "$dir/package.json" ] || printf '{"private": true}\n' > "$dir/package.json"
    npm install --prefix "$dir" --no-audit --no-fund --no-update-notifier --loglevel=error \
        --fetch-retries=2 --fetch-timeout=30000 "$pkg@$NODE_FALLBACK_MAJOR" >&2 ||
        die "npm install $pkg@$NODE_FALLBACK_MAJOR failed (is the npm registry reachable?)"
    node_at_least "$fallback" "$need" || die "$fallback is not Node.js >= $need"
    printf '%s' "$fallback"
}

TS_V1_PREFIX="$PEERS/ts-v1"
TS_V1_PKG="$TS_V1_PREFIX/node_modules/@modelcontextprotocol/sdk/package.json"
if [ "$WANT_TS_V1" = 1 ]; then
    npm_peer @modelcontextprotocol/sdk "$MCP_TS_V1_VERSION" "$TS_V1_PREFIX" "$TS_V1_PKG"
    PEER_TS_V1_NODE="$(node_for "$TS_V1_PKG")"
    [ -n "$PEER_TS_V1_NODE" ] || die "no Node.js for @modelcontextprotocol/sdk@$MCP_TS_V1_VERSION"
fi

EVERYTHING_PREFIX="$PEERS/everything"
EVERYTHING_DIR="$EVERYTHING_PREFIX/node_modules/@modelcontextprotocol/server-everything"
EVERYTHING_PKG="$EVERYTHING_DIR/package.json"
EVERYTHING_BIN="$EVERYTHING_DIR/dist/index.js"
if [ "$WANT_EVERYTHING" = 1 ]; then
    npm_peer @modelcontextprotocol/server-everything "$MCP_EVERYTHING_VERSION" "$EVERYTHING_PREFIX" "$EVERYTHING_BIN"
    PEER_EVERYTHING_NODE="$(node_for "$EVERYTHING_PKG")"
    [ -n "$PEER_EVERYTHING_NODE" ] || die "no Node.js for @modelcontextprotocol/server-everything@$MCP_EVERYTHING_VERSION"
fi

printf 'PEERS_DIR=%s\n' "$PEERS"
if [ "$WANT_PYTHON" = 1 ]; then
    printf 'PEER_PYTHON=%s\n' "$PEER_PYTHON"
fi
if [ "$WANT_TS" = 1 ]; then
    printf 'PEER_NODE=%s\n' "$PEER_NODE"
    printf 'PEER_NODE_PREFIX=%s\n' "$NODE_PREFIX"
fi
if [ "$WANT_INSPECTOR" = 1 ]; then
    printf 'PEER_INSPECTOR_NODE=%s\n' "$PEER_INSPECTOR_NODE"
    printf 'PEER_INSPECTOR_PREFIX=%s\n' "$INSPECTOR_PREFIX"
    printf 'PEER_INSPECTOR_CLI=%s\n' "$INSPECTOR_CLI"
fi
if [ "$WANT_TS_V1" = 1 ]; then
    printf 'PEER_TS_V1_NODE=%s\n' "$PEER_TS_V1_NODE"
    printf 'PEER_TS_V1_PREFIX=%s\n' "$TS_V1_PREFIX"
fi
if [ "$WANT_EVERYTHING" = 1 ]; then
    printf 'PEER_EVERYTHING_NODE=%s\n' "$PEER_EVERYTHING_NODE"
    printf 'PEER_EVERYTHING_PREFIX=%s\n' "$EVERYTHING_PREFIX"
    printf 'PEER_EVERYTHING_BIN=%s\n' "$EVERYTHING_BIN"
fi
