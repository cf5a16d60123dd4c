#!/usr/bin/env bash
# The PyPI tools the end-to-end checks run, each in a venv of its own under .build (nothing is
# installed system-wide): creates the named ones that are missing, every one without a name.
# scripts/test runs it niced beside the build, so that the checks after the build find them made
# instead of spending their first half-minute in pip; each check asks for its own again
# (test_venv in test-server.sh), which costs nothing once it is there.
#   scripts/test-venvs.sh [schemathesis|metrics|webhooks ...]
set -euo pipefail
cd "$(dirname "$0")/.."

# NAME PACKAGE MODULE: .build/NAME-venv, with PACKAGE from PyPI and MODULE importable.
venvs=(
  "schemathesis schemathesis schemathesis"
  "metrics prometheus_client prometheus_client"
  "webhooks standardwebhooks standardwebhooks"
)

wanted=("$@")
known=" "
for entry in "${venvs[@]}"; do known+="${entry%% *} "; done
for name in "$@"; do
  [[ "$known" == *" $name "* ]] || { echo "test-venvs: no venv named $name (known:$known)" >&2; exit 2; }
done
for entry in "${venvs[@]}"; do
  read -r name package module <<< "$entry"
  if [ ${#wanted[@]} -gt 0 ] && [[ " ${wanted[*]} " != *" $name "* ]]; then continue; fi
  venv=".build/$name-venv"
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import $module" 2>/dev/null; then
    mkdir -p .build
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$package"
  fi
done
