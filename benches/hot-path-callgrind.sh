#!/bin/bash
# Instructions per request of the server process (all threads, user space), counted by
# callgrind, for `ipam-guard serve --state-from` and for the do-nothing `examples/echo.rs`, under
# the same mixed load (16 connections). Counting starts after the state is loaded (callgrind_control
# --zero) and stops with a dump after the load, so the figure is the requests' own cost. Unlike
# wall time, it does not depend on what else runs on the machine.
#
#   benches/hot-path-callgrind.sh                           # 1k pools, 10k IPAddresses, 5000 requests
#   GUARD=/tmp/old/ipam-guard REQUESTS=2000 benches/hot-path-callgrind.sh
#   GUARD=/tmp/t/release/ipam-guard ECHO=/tmp/t/release/examples/echo NO_BUILD=1 benches/hot-path-callgrind.sh   # another build of both
#   GLIBC_TUNABLES= benches/hot-path-callgrind.sh           # glibc's defaults, not the image's
#   ONLY=address_create REQUESTS=2000 benches/hot-path-callgrind.sh   # one loadgen case (--only)
#
# Profiles stay in $OUT (callgrind_annotate $OUT/guard.out | head -60 shows where the time goes).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/ipam-guard-callgrind}
REQUESTS=${REQUESTS:-5000}
GUARD=${GUARD:-target/release/ipam-guard}
LG=target/release/examples/loadgen
ECHO=${ECHO:-target/release/examples/echo}
[ -n "${NO_BUILD:-}" ] || cargo build --release --bin ipam-guard --example loadgen --example echo
mkdir -p "$OUT"
STATE=(--pools 1000 --addresses 10000)
[ -d "$OUT/state" ] || $LG "${STATE[@]}" --write-state "$OUT/state" 2>&1 | tail -1

count() {
  local name=$1 port=$2
  shift 2
  local pid=$!
  # A server that exits at once (its port still held by the last run) is an error, not a wait.
  until (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "$name exited before it listened on $port (see $OUT/$name.log)" >&2
      return 1
    fi
    sleep 1
  done
  sleep 2
  callgrind_control --zero "$pid" >/dev/null
  local flags=(--url "https://localhost:$port" --cacert "$OUT/certs/ca.crt" --connections 16
    --requests "$REQUESTS" --warmup 0 "${STATE[@]}")
  [ "$name" = echo ] && flags+=(--baseline)
  [ -z "${ONLY:-}" ] || flags+=(--only "$ONLY")
  $LG "${flags[@]}" >"$OUT/lg-$name.txt" 2>&1
  callgrind_control --dump="$name" "$pid" >/dev/null
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  local ir
  ir=$(awk "/^summary:/ {print \$2}" "$OUT/$name.out.1")
  echo "$name: $(grep -h '^throughput' "$OUT/lg-$name.txt" | cut -d';' -f2 | tr -d ' ') ; $ir instructions for $REQUESTS requests = $((ir / REQUESTS)) per request"
}

rm -f "$OUT"/guard.out* "$OUT"/echo.out*
# Both servers with the image's environment (benches/image-env.sh); the subshell execs, so $! is
# the server.
(. benches/image-env.sh && exec valgrind --tool=callgrind --callgrind-out-file="$OUT/guard.out" $GUARD serve --dev --shutdown-delay 0s --log-format "$LOG_FORMAT" \
  --cert-dir "$OUT/certs" --state-from "$OUT/state" --listen 127.0.0.1:51100 \
  --probe-listen 127.0.0.1:51101 --metrics-listen 127.0.0.1:51102 >"$OUT/guard.log" 2>&1) &
count guard 51100
(. benches/image-env.sh && exec valgrind --tool=callgrind --callgrind-out-file="$OUT/echo.out" $ECHO \
  --cert-dir "$OUT/certs" --listen 127.0.0.1:51110 >"$OUT/echo.log" 2>&1) &
count echo 51110
