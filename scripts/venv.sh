# Sourced by scripts/demo.sh and scripts/test.sh: make ./.venv (installing Debian's
# python3-venv first when this Python cannot create one) and set $py to its interpreter and
# $venv to its directory. Inside an active virtualenv, that one is used instead.
py=${PYTHON:-python3}
if [ -n "${VIRTUAL_ENV:-}" ]; then
  py=python
  venv=$VIRTUAL_ENV
elif [ ! -x .venv/bin/python ]; then
  if ! "$py" -c 'import ensurepip, venv' 2>/dev/null; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "installing Debian package: python3-venv"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q -o DPkg::Lock::Timeout=300 \
      --no-install-recommends python3-venv
  fi
  echo "creating ./.venv"
  "$py" -m venv .venv
  py=.venv/bin/python
  venv=.venv
else
  py=.venv/bin/python
  venv=.venv
fi
