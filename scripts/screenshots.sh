#!/usr/bin/env bash
# Refresh the README's pictures in docs/screenshots from the browser tests (real headless
# Chromium on the demo). The test suite itself never writes there: without
# QUEUELENS_SCREENSHOT_DIR the screenshots go to a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
[ -x "$py" ] || { echo "run scripts/test.sh first (it creates .venv)"; exit 2; }
QUEUELENS_SCREENSHOT_DIR=docs/screenshots "$py" -m pytest -q -p no:cacheprovider tests/browser "$@"
