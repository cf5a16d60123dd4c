#!/usr/bin/env bash
# Many servers on one PostgreSQL (docs/scaling.md): a primary and a streaming replica on loopback
# (pg_basebackup -R), the simulator (control API and fake Server API), a reference server on SQLite
# and three `entitled serve` processes on the primary with the replica for reads. scale_check.py
# delivers the simulator's notifications and the apps' posted transactions round-robin across the
# three with duplicates and shuffles, kills one with -9 halfway and restarts it, then checks: every
# answer equals the reference's, every acknowledged notification is in the ledger, every backfill
# job ran once, and a client's read after its own write sees it. The replica replays 200 ms late
# (recovery_min_apply_delay), so a read routed to it without regard to its position would miss it.
# Last, a client writes through one server and reads at once through the next: with
# ENTITLED_SCALE_READ_YOUR_WRITES=thisServer (database.readYourWrites) that read misses the write
# and the script fails, which shows the check is what keeps it.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=env.sh
. scripts/env.sh
entitled="${ENTITLED_BINARY:-.build/debug/entitled}"
[ -x "$entitled" ] || swift build --product entitled

bindir="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
if [ ! -x "$bindir/pg_basebackup" ] && command -v pg_ctl >/dev/null 2>&1; then bindir="$(dirname "$(command -v pg_ctl)")"; fi
[ -x "$bindir/pg_basebackup" ] || { echo "test-scale: PostgreSQL server binaries not found" >&2; exit 1; }

dir="$(mktemp -d /tmp/entitled-scale.XXXXXX)"
chmod 755 "$dir"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }
primary_port="$(free_port)"
replica_port="$(free_port)"
run=()
if [ "$(id -u)" -eq 0 ]; then
  # PostgreSQL refuses to run as root: the clusters belong to the postgres account.
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
  mkdir -p "$dir/pg"
  chown postgres "$dir/pg"
  run=(runuser -u postgres --)
else
  mkdir -p "$dir/pg"
fi
sim_pid=""
cleanup() {
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null
  "${run[@]}" "$bindir/pg_ctl" -D "$dir/pg/replica" -m immediate stop >/dev/null 2>&1 || true
  "${run[@]}" "$bindir/pg_ctl" -D "$dir/pg/primary" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

# jit=off for the reason scripts/with-postgres.sh gives: never-analysed tables made the planner
# compile small queries with LLVM.
"${run[@]}" "$bindir/initdb" -D "$dir/pg/primary" -A trust -U postgres --no-sync -E UTF8 >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 1; }
"${run[@]}" "$bindir/pg_ctl" -D "$dir/pg/primary" -l "$dir/pg/primary.log" -w \
  -o "-h 127.0.0.1 -p $primary_port -k $dir/pg -c max_connections=200 -c wal_level=replica -c jit=off" start >/dev/null \
  || { cat "$dir/pg/primary.log" >&2; exit 1; }
"${run[@]}" "$bindir/pg_basebackup" -h 127.0.0.1 -p "$primary_port" -U postgres -D "$dir/pg/replica" -R -X stream \
  >"$dir/basebackup.log" 2>&1 || { cat "$dir/basebackup.log" >&2; exit 1; }
"${run[@]}" "$bindir/pg_ctl" -D "$dir/pg/replica" -l "$dir/pg/replica.log" -w \
  -o "-h 127.0.0.1 -p $replica_port -k $dir/pg -c max_connections=200 -c jit=off -c hot_standby=on -c recovery_min_apply_delay=${ENTITLED_SCALE_REPLICA_DELAY_MS:-200}ms" start >/dev/null \
  || { cat "$dir/pg/replica.log" >&2; exit 1; }

# The fake Server API's key (backfill jobs fetch histories from it).
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$dir/key.p8"
sim_port="$(free_port)"
"$entitled" simulate --data "$dir/sim" --listen "127.0.0.1:$sim_port" \
  --catalog Tests/EntitledTests/Scenarios/catalog.json --environment Sandbox --start "${ENTITLED_SCALE_START:-1767225600000}" \
  --api-key "$dir/key.p8" --key-id SCALEKEY01 --issuer-id 11111111-2222-4333-8444-555555555555 \
  >"$dir/sim.log" 2>&1 &
sim_pid=$!

python3 scripts/scale_check.py --entitled "$entitled" --dir "$dir" --simulator "http://127.0.0.1:$sim_port" \
  --primary "postgres://postgres@127.0.0.1:$primary_port/postgres" \
  --replica "postgres://postgres@127.0.0.1:$replica_port/postgres" \
  --customers "${ENTITLED_SCALE_CUSTOMERS:-24}" --read-your-writes "${ENTITLED_SCALE_READ_YOUR_WRITES:-allServers}"
