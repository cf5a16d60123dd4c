#!/usr/bin/env bash
# Builds `entitled` the way the Dockerfile does, without Docker, and checks that the Dockerfile's
# runtime stage installs every shared library the binary needs.
#
#   scripts/docker-equivalent-build.sh             release build with the Swift runtime linked in
#                                                  (--static-swift-stdlib, as the Dockerfile), binary
#                                                  copied to .build/docker-equivalent/entitled, then checked
#   scripts/docker-equivalent-build.sh --check BIN only the check, on an existing binary (cheap: CI runs
#                                                  it on the debug build scripts/test made)
#
# The check: every shared library the binary loads (`ldd`) resolves; each one that is not the Swift
# runtime (linked in by the Dockerfile's build) nor part of the runtime image's base (glibc, libgcc,
# libstdc++) belongs to a Debian package (`dpkg -S`) that the Dockerfile's RUNTIME_PACKAGES lists.
set -euo pipefail
cd "$(dirname "$0")/.."

binary=""
if [ "${1:-}" = "--check" ]; then
  binary="${2:?--check needs the binary}"
else
  out=.build/docker-equivalent
  swift build -c release --static-swift-stdlib --product entitled --build-path "$out/build"
  mkdir -p "$out"
  cp "$out/build/release/entitled" "$out/entitled"
  binary="$out/entitled"
  "$binary" --version
fi

# The runtime stage's package list, from the Dockerfile's one RUNTIME_PACKAGES line.
dockerfile="${DOCKERFILE:-Dockerfile}"
declared="$(sed -n 's/^ARG RUNTIME_PACKAGES="\(.*\)"$/\1/p' "$dockerfile")"
[ -n "$declared" ] || { echo "$dockerfile: no ARG RUNTIME_PACKAGES=\"…\" line" >&2; exit 1; }
# What debian:bookworm-slim has already.
base="libc6 libgcc-s1 libstdc++6 zlib1g"

status=0
if ldd "$binary" | grep -q "not found"; then
  echo "$binary: libraries not found:" >&2
  ldd "$binary" | grep "not found" >&2
  status=1
fi
needed=""
is_swift_runtime() {
  case "$1" in libswift*|libFoundation*|lib_Foundation*|libdispatch.so|libBlocksRuntime.so) return 0 ;; esac
  return 1
}
# Direct dependencies only (their packages' own dependencies come with them from apt) — of the
# binary and, when it loads the Swift runtime from the toolchain (a debug build), of those runtime
# libraries too: what they load (libcurl for URLSession) a static build links in and needs.
elves="$binary"
for soname in $(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
  if is_swift_runtime "$soname"; then
    elves="$elves $(ldd "$binary" | awk -v name="$soname" '$1 == name { print $3 }')"
  fi
done
sonames="$(for elf in $elves; do readelf -d "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; done | sort -u)"
for soname in $sonames; do
  is_swift_runtime "$soname" && continue
  case "$soname" in
    ld-linux*) continue ;; # the dynamic loader (libc6)
  esac
  path="$(ldd "$binary" | awk -v name="$soname" '$1 == name { print $3 }')"
  # dpkg knows a file by the path its package installed it at: with merged /usr, either one.
  package="$(dpkg -S "$path" 2>/dev/null | head -n 1 | cut -d: -f1 || true)"
  [ -n "$package" ] || package="$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -n 1 | cut -d: -f1 || true)"
  if [ -z "$package" ]; then
    echo "$soname ($path): no Debian package owns it" >&2
    status=1
    continue
  fi
  needed="$needed $package"
  case " $declared $base " in
    *" $package "*) ;;
    *)
      echo "$soname comes from $package, which the Dockerfile's RUNTIME_PACKAGES does not install" >&2
      status=1
      ;;
  esac
done
needed="$(echo "$needed" | tr ' ' '\n' | sort -u | tr '\n' ' ')"
for package in $declared; do
  case " $needed " in
    *" $package "*) ;;
    *) echo "the Dockerfile installs $package, which $binary does not load" >&2; status=1 ;;
  esac
done
[ "$status" = 0 ] && echo "runtime packages match: $declared"
exit "$status"
