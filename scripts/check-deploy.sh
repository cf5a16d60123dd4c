#!/usr/bin/env bash
# Checks what docs/deploy.md ships, cheaply (scripts/test runs it after building):
# - deploy/entitled.service passes `systemd-analyze verify` and keeps a low exposure score
#   (`systemd-analyze security --offline`), when systemd-analyze is installed;
# - the Dockerfile's runtime packages are what the built binary loads
#   (scripts/docker-equivalent-build.sh --check), and that check fails when one is missing;
# - every command of docs/deploy.md works as written, against a throwaway install
#   (scripts/check-deploy-doc.py: it lists what cannot run here and why).
#
#   scripts/check-deploy.sh [BINARY]    default $ENTITLED_BINARY, else .build/debug/entitled
#                                       (built by `swift build`)
set -euo pipefail
cd "$(dirname "$0")/.."
binary="$(realpath "${1:-${ENTITLED_BINARY:-.build/debug/entitled}}")"
work="$(mktemp -d /tmp/entitled-check-deploy.XXXXXX)"
trap 'rm -rf "$work"' EXIT

if command -v systemd-analyze >/dev/null; then
  # verify insists that ExecStart's program exists: point it at the build.
  sed "s|/usr/local/bin/entitled|$binary|" deploy/entitled.service > "$work/entitled.service"
  systemd-analyze verify "$work/entitled.service"
  # 0–100 (the score shown, times ten): 2.0 and below is "OK" in systemd's words.
  systemd-analyze security --offline=yes --threshold=20 "$work/entitled.service" > "$work/security.txt" \
    || { cat "$work/security.txt"; echo "deploy/entitled.service: exposure above 2.0" >&2; exit 1; }
  echo "deploy/entitled.service: verified, $(grep -o 'Overall exposure level.*' "$work/security.txt")"
else
  echo "systemd-analyze not installed: deploy/entitled.service not verified"
fi

scripts/docker-equivalent-build.sh --check "$binary"
# The check must be able to fail: without libpq5 the binary cannot start in the image.
sed 's/ libpq5//' Dockerfile > "$work/Dockerfile"
if DOCKERFILE="$work/Dockerfile" scripts/docker-equivalent-build.sh --check "$binary" > "$work/missing.txt" 2>&1; then
  echo "the runtime package check passed a Dockerfile without libpq5" >&2
  exit 1
fi
grep -q "libpq.so.5 comes from libpq5" "$work/missing.txt"

python3 scripts/check-deploy-doc.py "$binary"
