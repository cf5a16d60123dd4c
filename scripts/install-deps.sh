#!/usr/bin/env bash
# Installs the system packages Entitled needs, when they are missing.
#   scripts/install-deps.sh [run|test] [--bench] [--list]
# run: what building and running the server needs (scripts/run). test (the default): that and
# what the tests need besides (scripts/test, CI): PostgreSQL, a browser, a load generator, Python,
# and moto (pip, into .build/moto-venv) for the export upload tests.
# --bench adds the benchmarks' reference tools: nginx (`entitled bench api` serves a static file
# with it as the customer reads' reference; the benchmark starts it itself, on loopback).
# --list prints the packages of the set, one a line, and installs nothing.
# Debian/Ubuntu: apt-get (as root, or through sudo). macOS: Homebrew.
# The Swift 6 toolchain itself is a prerequisite (https://www.swift.org/install).
set -euo pipefail

set_name=test
list=false
bench=false
for argument in "$@"; do
  case "$argument" in
    run | test) set_name="$argument" ;;
    --bench) bench=true ;;
    --list) list=true ;;
    *) echo "usage: scripts/install-deps.sh [run|test] [--bench] [--list]" >&2; exit 2 ;;
  esac
done

if ! $list && ! command -v swift >/dev/null 2>&1; then
  echo "install-deps: the Swift toolchain (6.0 or newer) is required: https://www.swift.org/install" >&2
  exit 1
fi

case "$(uname -s)" in
  Linux)
    # libcurl4-openssl-dev: the CCurl system library (HTTPClient, every outbound call) links libcurl
    # (and a --static-swift-stdlib build links Foundation's networking, which needs it too).
    # libzstd-dev: the CZstd system library (Storage compresses the ledger's JSON with zstd).
    packages=(pkg-config libssl-dev libsqlite3-dev zlib1g-dev libzstd-dev libpq-dev libmicrohttpd-dev libcurl4-openssl-dev)
    # postgresql: the storage suites' throwaway cluster; chromium: the console's browser test
    # (scripts/console-browser-test.sh) runs it headless; wrk: the HTTP benchmarks; python3: the
    # scripted checks (schemathesis, metrics, webhooks, scale); openssl and curl: the shell checks;
    # nodejs and golang-go: the token-minting examples (scripts/minting-check.sh).
    [ "$set_name" = test ] && packages+=(postgresql openssl curl wrk python3 python3-venv chromium nodejs golang-go)
    # nginx: the benchmark runs its own instance (its own configuration, a loopback port, in its
    # temporary folder); the package's default site is not used. wrk drives both.
    $bench && packages+=(nginx)
    $bench && [ "$set_name" != test ] && packages+=(wrk)
    if $list; then printf '%s\n' "${packages[@]}"; exit 0; fi
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
    packages=(pkg-config openssl@3 sqlite zstd libpq libmicrohttpd)
    [ "$set_name" = test ] && packages+=(postgresql@16 wrk python@3 node go)
    $bench && packages+=(nginx)
    $bench && [ "$set_name" != test ] && packages+=(wrk)
    if $list; then printf '%s\n' "${packages[@]}"; exit 0; fi
    command -v brew >/dev/null 2>&1 || { echo "install-deps: Homebrew is required on macOS: https://brew.sh" >&2; exit 1; }
    for p in "${packages[@]}"; do
      brew list --versions "$p" >/dev/null 2>&1 || brew install "$p"
    done
    ;;
  *)
    echo "install-deps: unsupported system $(uname -s); install OpenSSL 3, SQLite, zstd, libpq and libmicrohttpd by hand" >&2
    ;;
esac

# moto (PyPI): the S3-compatible server the export upload tests start (ExportsTests), in a venv under
# .build that the tests look in; its version is pinned to the one the tests were written against.
venv="$(cd "$(dirname "$0")/.." && pwd)/.build/moto-venv"
if [ "$set_name" = test ] && ! command -v moto_server >/dev/null 2>&1 && [ ! -x "$venv/bin/moto_server" ]; then
  echo "install-deps: installing moto[server] into $venv" >&2
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check 'moto[server]==5.2.1'
fi
