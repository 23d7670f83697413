#!/usr/bin/env bash
# Headless Chromium for the inspector's browser tests (tests/test_inspect_browser.py):
# Debian's chromium package, driven by Playwright for Python with executable_path (no
# browser download). Debian/Ubuntu (apt-get); idempotent: does nothing when it is installed.
# Playwright itself comes with the `browser` (and `dev`) extra: pip install -e '.[browser]'.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || [ -x /usr/bin/chromium ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_browser: please install chromium (no apt-get here)" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends chromium
