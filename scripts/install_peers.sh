#!/usr/bin/env bash
# install_peers.sh - install the real MCP peer clients used by tests/test_interop.py:
#
#   * the official Python SDK, PyPI mcp==$MCP_PY_VERSION, in its own venv
#     (it brings pydantic, httpx, ... which must not leak into mcpkit's environment);
#   * the official TypeScript SDK v2 client, npm @modelcontextprotocol/client@$MCP_TS_VERSION,
#     installed with `npm install --prefix`, plus a Node.js new enough for it: the `node` on
#     PATH when it satisfies the package's "engines", else npm's node-linux-<arch>@22.
#
# Idempotent and cached: a finished install leaves a stamp and is not redone. Progress goes
# to stderr (only when something is installed); stdout is KEY=VALUE lines saying where:
#
#   PEERS_DIR=...          the install root (default: tests/.peers beside this repo; it
#                          gets a .gitignore of "*")
#   PEER_PYTHON=...        the python of the venv holding mcp
#   PEER_NODE=...          the node binary to run the TypeScript peer with
#   PEER_NODE_PREFIX=...   the npm prefix holding node_modules/@modelcontextprotocol/client
#
# Environment: MCPKIT_PEERS_DIR (install root), MCPKIT_PEER_PYTHON (interpreter that makes
# the venv, default python3), MCPKIT_PEER_NODE (node binary to use, skips the Node check).
# Exit status: 0 when both peers are ready; non-zero with a message on stderr otherwise
# (e.g. a package registry is unreachable).
set -euo pipefail

MCP_PY_VERSION=2.3.0
MCP_TS_VERSION=2.4.0
NODE_FALLBACK_MAJOR=22

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
PEERS="${MCPKIT_PEERS_DIR:-$root/tests/.peers}"

log() { printf 'install_peers: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

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
if [ "$(cat "$PY_STAMP" 2>/dev/null)" != "mcp==$MCP_PY_VERSION" ] || [ ! -x "$PEER_PYTHON" ]; then
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

printf 'PEERS_DIR=%s\n' "$PEERS"
printf 'PEER_PYTHON=%s\n' "$PEER_PYTHON"
printf 'PEER_NODE=%s\n' "$PEER_NODE"
printf 'PEER_NODE_PREFIX=%s\n' "$NODE_PREFIX"
