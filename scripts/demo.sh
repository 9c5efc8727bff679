#!/usr/bin/env bash
# The README's first command: install queuelens into ./.venv and serve the dashboard on the
# embedded demo fleet at http://127.0.0.1:8050/ (arguments go to `queuelens serve`, e.g.
# scripts/demo.sh --prometheus http://prometheus:9090).
#
# It says what it is doing, one line per step. The install is editable (`pip install -e .`:
# the venv runs this checkout's code, as after scripts/test.sh's install), so a change to the
# sources needs no reinstall. What does: a change to pyproject.toml or constraints.txt, another
# interpreter, or a venv whose queuelens is missing or not this checkout. A hash of those is
# kept in $venv/.queuelens-demo-install after each successful install, and a start that finds
# the same hash skips pip (the check takes 0.03 s; pip took 5-14 s).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh
say() { echo "scripts/demo.sh: $*"; }

stamp_file=$venv/.queuelens-demo-install
# The hash of the install's inputs and of where the venv's queuelens comes from (-I: neither
# the current folder nor $PYTHONPATH is on sys.path, so find_spec sees what the venv has).
install_stamp() {
  "$py" -I - <<'PY'
import hashlib
import importlib.util
import os
import sys

h = hashlib.sha256(b"queuelens demo.sh 1: pip install -c constraints.txt -e .\n")
h.update(f"{sys.version}\n{sys.executable}\n".encode())
for name in ("pyproject.toml", "constraints.txt"):
    with open(name, "rb") as f:
        h.update(name.encode() + b"\n" + hashlib.sha256(f.read()).digest())
spec = importlib.util.find_spec("dashboard")
origin = spec.origin if spec is not None else None
here = os.path.realpath(os.path.join("dashboard", "__init__.py"))
mine = origin is not None and os.path.realpath(origin) == here
h.update(b"installed from this checkout" if mine else b"not installed from here")
print(h.hexdigest())
PY
}

if [ -x "$venv/bin/queuelens" ] && [ -f "$stamp_file" ] \
    && [ "$(cat "$stamp_file")" = "$(install_stamp)" ]; then
  say "queuelens is installed in $venv and current (pyproject.toml, constraints.txt unchanged)"
else
  say "installing queuelens and its dependencies into $venv (first run: ~2 min)"
  rm -f "$stamp_file"
  "$py" -m pip install -q --disable-pip-version-check -c constraints.txt -e .
  install_stamp >"$stamp_file"
fi
say "starting the dashboard (by hand: . $venv/bin/activate && queuelens serve)"
exec "$py" -m dashboard.cli serve "$@"
