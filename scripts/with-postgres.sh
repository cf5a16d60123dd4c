#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL cluster on 127.0.0.1 and ENTITLED_TEST_POSTGRES
# pointing at it. The cluster lives in a temporary folder and is stopped and removed afterwards;
# the command's exit status is passed through.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=env.sh
. "$here/env.sh"

bindir=""
if command -v pg_ctl >/dev/null 2>&1; then
  bindir="$(dirname "$(command -v pg_ctl)")"
else
  bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
fi
[ -x "$bindir/initdb" ] || { echo "with-postgres: PostgreSQL server binaries not found (install postgresql)" >&2; exit 1; }

dir="$(mktemp -d /tmp/entitled-pg.XXXXXX)"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
run=()
if [ "$(id -u)" -eq 0 ]; then
  # PostgreSQL refuses to run as root: use the postgres account (created by Debian's package).
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
  chown postgres "$dir"
  run=(runuser -u postgres --)
fi

cleanup() {
  "${run[@]}" "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

"${run[@]}" "$bindir/initdb" -D "$dir/data" -A trust -U postgres --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
# fsync=off: the cluster is thrown away and nothing crashes it (tests end sessions or kill
# Entitled's processes, never PostgreSQL), so flushing its WAL decides no outcome; it only made
# every commit wait for the disk: a large share of the PostgreSQL suites' time. jit=off: the
# tests' tables are nearly empty and never analysed, so the planner guesses costs past JIT's
# threshold and LLVM compiled each such query, 0.3-2 s apiece (the erasure tests' scans of every
# column of every table spent nearly all their time there); results are the same either way.
# 500 connections: the storage suites and the server suites run in processes side by side, each
# test's stores keep pools, and a crash test's child opens 16 more; at 200 a child once found none
# free.
"${run[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
  -o "-h 127.0.0.1 -p $port -k $dir -c max_connections=500 -c fsync=off -c jit=off" start >/dev/null \
  || { cat "$dir/server.log" >&2; exit 1; }

export ENTITLED_TEST_POSTGRES="postgresql://postgres@127.0.0.1:$port/postgres"
echo "with-postgres: PostgreSQL on 127.0.0.1:$port ($ENTITLED_TEST_POSTGRES)" >&2
set +e
"$@"
status=$?
set -e
exit $status
