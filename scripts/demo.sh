#!/usr/bin/env bash
# The README's first command: install queuelens into ./.venv and serve the dashboard on the
# embedded demo fleet at http://127.0.0.1:8050/ (arguments go to `queuelens serve`, e.g.
# scripts/demo.sh --prometheus http://prometheus:9090).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
"$py" -m pip install -q --disable-pip-version-check -c constraints.txt .
exec "$py" -m dashboard.cli serve "$@"
