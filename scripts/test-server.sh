# Shared by the scripts that test a live server (schemathesis.sh, metrics-check.sh,
# webhook-check.sh, console-browser-test.sh); source it.
#   test_venv NAME                  sets $venv to .build/NAME-venv, made first if missing
#                                   (scripts/test-venvs.sh lists them)
#   $entitled                       the binary: $ENTITLED_BINARY (scripts/test sets it to its
#                                   build's), else .build/debug/entitled (`swift build`)
#   start_serve NAME                runs $entitled serve with $dir/entitled.json on a
#                                   free loopback port and a throwaway SQLite database in $dir;
#                                   sets $pid; the EXIT trap stops it and removes $dir
#   event_port EVENT                the port of the log event EVENT's "address" (empty until logged)

test_venv() {
  venv=".build/$1-venv"
  scripts/test-venvs.sh "$1"
}

entitled="${ENTITLED_BINARY:-.build/debug/entitled}"
dir="$(mktemp -d /tmp/entitled-test-server.XXXXXX)"
pid=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

event_port() {
  grep "\"event\":\"$1\"" "$dir/serve.log" | grep -o '"address":"127.0.0.1:[0-9]*"' | grep -o '[0-9]*"$' | tr -d '"' || true
}

start_serve() {
  # Emptied here, not only by the redirect below: that runs in the forked child, so a read in this
  # loop could still see a previous server's "listening" line (a restart after kill -9) and return
  # its port before the child truncated the log.
  : > "$dir/serve.log"
  "$entitled" serve --config "$dir/entitled.json" --listen 127.0.0.1:0 \
    --database "sqlite:$dir/db/entitled.sqlite" > "$dir/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do
    [ -n "$(event_port listening)" ] && return 0
    sleep 0.1
  done
  cat "$dir/serve.log" >&2
  echo "$1: the server did not start" >&2
  exit 1
}
