#!/usr/bin/env bash
# Installs the system packages Entitled builds and tests with, when they are missing.
# Debian/Ubuntu: apt-get (as root, or through sudo). macOS: Homebrew.
# The Swift 6 toolchain itself is a prerequisite (https://www.swift.org/install).
set -euo pipefail

if ! command -v swift >/dev/null 2>&1; then
  echo "install-deps: the Swift toolchain (6.0 or newer) is required: https://www.swift.org/install" >&2
  exit 1
fi

case "$(uname -s)" in
  Linux)
    # libcurl4-openssl-dev: the CCurl system library (HTTPClient, every outbound call) links libcurl
    # (and a --static-swift-stdlib build links Foundation's networking, which needs it too).
    # chromium: the console's browser test (scripts/console-browser-test.sh) runs it headless.
    packages=(pkg-config libssl-dev libsqlite3-dev zlib1g-dev libpq-dev libmicrohttpd-dev libcurl4-openssl-dev postgresql openssl curl wrk python3 python3-venv chromium)
    missing=()
    for p in "${packages[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
      echo "install-deps: installing ${missing[*]}" >&2
      sudo=""
      [ "$(id -u)" -eq 0 ] || sudo="sudo"
      $sudo apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    ;;
  Darwin)
    command -v brew >/dev/null 2>&1 || { echo "install-deps: Homebrew is required on macOS: https://brew.sh" >&2; exit 1; }
    for p in pkg-config openssl@3 sqlite libpq libmicrohttpd postgresql@16 wrk python@3; do
      brew list --versions "$p" >/dev/null 2>&1 || brew install "$p"
    done
    ;;
  *)
    echo "install-deps: unsupported system $(uname -s); install OpenSSL 3, SQLite, libpq and libmicrohttpd by hand" >&2
    ;;
esac
