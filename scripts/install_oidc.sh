#!/usr/bin/env bash
# install_oidc.sh - install the real authorization server used by tests/test_oauth_oidc.py:
# npm oidc-provider@$OIDC_PROVIDER_VERSION (a certified OpenID provider, by panva), with
# `npm install --prefix` into a gitignored directory, plus a Node.js new enough for it (the
# `node` on PATH when it is >= 20.19, else npm's node-linux-<arch>@22 in the same directory).
#
# Idempotent and cached (a stamp file). Progress goes to stderr; stdout is KEY=VALUE lines:
#   OIDC_PREFIX=...   the npm prefix holding node_modules/oidc-provider
#   OIDC_NODE=...     the node binary to run it with
#
# Environment: MCPKIT_OIDC_DIR (install root, default tests/.oidc beside this repo; it gets a
# .gitignore of "*"), MCPKIT_OIDC_NODE (node binary to use, skips the version check).
# Exit status: 0 when ready; non-zero with a message on stderr (e.g. no registry access).
set -euo pipefail

OIDC_PROVIDER_VERSION=9.13.3
NODE_FALLBACK_MAJOR=22

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
DIR="${MCPKIT_OIDC_DIR:-$root/tests/.oidc}"
log() { printf 'install_oidc: %s\n' "$*" >&2; }

mkdir -p "$DIR"
[ -f "$DIR/.gitignore" ] || printf '*\n' >"$DIR/.gitignore"

node_ok() {  # $1: node binary; true when >= 20.19
    local v
    v="$("$1" -p 'process.versions.node' 2>/dev/null)" || return 1
    local major="${v%%.*}" rest="${v#*.}"
    local minor="${rest%%.*}"
    [ "$major" -gt 20 ] || { [ "$major" -eq 20 ] && [ "$minor" -ge 19 ]; }
}

node_bin="${MCPKIT_OIDC_NODE:-}"
if [ -z "$node_bin" ]; then
    if command -v node >/dev/null 2>&1 && node_ok "$(command -v node)"; then
        node_bin="$(command -v node)"
    else
        case "$(uname -m)" in x86_64 | amd64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) log "unsupported machine $(uname -m)"; exit 1 ;; esac
        node_bin="$DIR/node$NODE_FALLBACK_MAJOR/node_modules/node-linux-$arch/bin/node"
        if [ ! -x "$node_bin" ]; then
            log "installing node-linux-$arch@$NODE_FALLBACK_MAJOR"
            npm install --silent --no-audit --no-fund --prefix "$DIR/node$NODE_FALLBACK_MAJOR" \
                "node-linux-$arch@$NODE_FALLBACK_MAJOR" >&2
        fi
    fi
fi

prefix="$DIR/provider"
stamp="$prefix/.installed-$OIDC_PROVIDER_VERSION"
if [ ! -f "$stamp" ]; then
    log "installing oidc-provider@$OIDC_PROVIDER_VERSION"
    mkdir -p "$prefix"
    npm install --silent --no-audit --no-fund --prefix "$prefix" "oidc-provider@$OIDC_PROVIDER_VERSION" >&2
    touch "$stamp"
fi
printf 'OIDC_PREFIX=%s\nOIDC_NODE=%s\n' "$prefix" "$node_bin"
