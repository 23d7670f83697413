#!/usr/bin/env bash
# System packages the tests run for real: redis-server (the shared backend) and nginx (the
# round-robin load balancer) for the scale-out tests, valgrind for the counted bench
# (bench/instructions.py). Debian/Ubuntu (apt-get); idempotent: does nothing
# when all are already installed. The tests start their own instances on loopback ports
# in temporary directories; no system service is used or needed.
set -euo pipefail

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v valgrind >/dev/null 2>&1 || missing+=(valgrind)
if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_system_deps: please install ${missing[*]} (no apt-get here)" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
# Packages may start their system services; the tests do not use them.
for svc in redis-server nginx; do
    if command -v service >/dev/null 2>&1; then
        $SUDO service "$svc" stop >/dev/null 2>&1 || true
    fi
done
