#!/usr/bin/env bash
# The one test command (README, .ci/run): installs everything the tests need on Debian 12 —
# Debian's prometheus, chromium and chromium-driver when missing, and the Python `test` and
# `bench` extras in ./.venv at the versions of constraints.txt — then runs ruff, mypy and the
# whole pytest suite. Tested on Debian 12 (bookworm) with Python >= 3.11, which is what CI runs.
# Elsewhere it stops, in one line, when something it cannot install is missing.
# Extra arguments go to pytest (e.g. scripts/test.sh -k lab).
set -euo pipefail
cd "$(dirname "$0")/.."

# The platform: Debian 12 is tested; Ubuntu's chromium is a snap (the chromium-browser and
# chromium-chromedriver debs only install it), and Ubuntu 22.04's Python is 3.10.
os_id=unknown os_version="" os_name="an unknown OS"
if [ -r /etc/os-release ]; then
  os_id=$(. /etc/os-release && echo "${ID:-unknown}")
  os_version=$(. /etc/os-release && echo "${VERSION_ID:-}")
  os_name=$(. /etc/os-release && echo "${PRETTY_NAME:-$ID}")
fi
stop() { echo "scripts/test.sh: $*" >&2; exit 1; }
if [ -n "${VIRTUAL_ENV:-}" ]; then check_py=python
elif [ -x .venv/bin/python ]; then check_py=.venv/bin/python
else check_py=${PYTHON:-python3}; fi
"$check_py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null \
  || stop "queuelens needs Python >= 3.11; $check_py is $("$check_py" -V 2>&1 || echo missing) on $os_name (Debian 12 has 3.11; or set PYTHON=python3.11)"
case "$os_id" in
  debian) [ "$os_version" = 12 ] || echo "note: tested on Debian 12, this is $os_name" ;;
  ubuntu)
    { command -v chromium && command -v chromedriver; } >/dev/null \
      || stop "on $os_name chromium is only a snap: run 'sudo snap install chromium' and put /snap/bin/chromium and /snap/bin/chromium.chromedriver on PATH as chromium and chromedriver (or use Debian 12)" ;;
  *)
    { command -v prometheus && command -v promtool && command -v chromium \
        && command -v chromedriver; } >/dev/null \
      || stop "untested on $os_name: install prometheus, promtool, chromium and chromedriver (on PATH) yourself, or use Debian 12" ;;
esac

need=()
{ command -v prometheus && command -v promtool; } >/dev/null || need+=(prometheus)
command -v victoria-metrics >/dev/null || need+=(victoria-metrics)
command -v chromium >/dev/null || need+=(chromium)
command -v chromedriver >/dev/null || need+=(chromium-driver)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "installing Debian packages: ${need[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q -o DPkg::Lock::Timeout=300 \
    --no-install-recommends "${need[@]}"
fi
# Debian's prometheus (and victoria-metrics) packages enable a service that listens on all
# interfaces (:9090, :8428) from boot; the tests start their own servers, so stop and disable
# the one just installed. Without systemd as init (containers, most CI) it never starts.
for svc in prometheus victoria-metrics; do
  case " ${need[*]} " in *" $svc "*) ;; *) continue ;; esac
  if [ -d /run/systemd/system ]; then
    echo "note: Debian's $svc package enables $svc.service on all interfaces; disabling it"
    $sudo systemctl disable --now "$svc" || true
  fi
done

. scripts/venv.sh
"$py" -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[test,bench]'

echo "== ruff";  "$py" -m ruff check .
echo "== mypy";  "$py" -m mypy
echo "== pytest"
export NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}"
"$py" -m pytest "$@"
