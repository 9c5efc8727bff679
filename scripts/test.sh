#!/usr/bin/env bash
# The one test command (README, .ci/run): installs everything the tests need on a Debian/Ubuntu
# machine — Debian's prometheus, chromium and chromium-driver when missing, and the Python
# `test` extra in ./.venv — then runs ruff, mypy and the whole pytest suite.
# Extra arguments go to pytest (e.g. scripts/test.sh -k lab).
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
{ command -v prometheus && command -v promtool; } >/dev/null || need+=(prometheus)
command -v chromium >/dev/null || need+=(chromium)
command -v chromedriver >/dev/null || need+=(chromium-driver)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "installing Debian packages: ${need[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q -o DPkg::Lock::Timeout=300 \
    --no-install-recommends "${need[@]}"
fi

. scripts/venv.sh
"$py" -m pip install -q --disable-pip-version-check -e '.[test,bench]'

echo "== ruff";  "$py" -m ruff check .
echo "== mypy";  "$py" -m mypy
echo "== pytest"
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}"
"$py" -m pytest "$@"
