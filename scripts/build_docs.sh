#!/usr/bin/env bash
# Build the API reference (mkdocs.yml, docs/, the docstrings via mkdocstrings) with warnings as
# errors. Uses $PYTHON (default .venv/bin/python) and installs the docs extra into it when
# mkdocstrings is missing. The site goes to $SITE_DIR, or to a temporary directory that is
# removed afterwards (a check only).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
if ! "$PY" -c "import mkdocs, mkdocstrings, mkdocstrings_handlers.python" 2>/dev/null; then
    "$PY" -m pip install -q --disable-pip-version-check -e '.[docs]'
fi
if [ -n "${SITE_DIR:-}" ]; then
    exec "$PY" -m mkdocs build --strict --clean --site-dir "$SITE_DIR"
fi
site="$(mktemp -d)"
trap 'rm -rf "$site"' EXIT
"$PY" -m mkdocs build --strict --clean --site-dir "$site"
echo "docs: built cleanly (mkdocs --strict)"
