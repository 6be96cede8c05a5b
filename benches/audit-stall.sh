#!/bin/bash
# What the periodic audit costs the webhook while it runs: `wrk` at one connection POSTing one
# admitted IPAddress CREATE to `ipam-guard serve --dev --state-from` (10k pools, 100k claims, 100k
# IPAddresses: 210,064 objects), once without the audit and once with a round every INTERVAL, so
# a tenth or so of the run falls inside a round. Both with the image's environment and the worker
# count the Deployment's CPU limit gives (benches/image-env.sh). Prints wrk's latency lines.
#
#   benches/audit-stall.sh                         # builds; INTERVAL=2s, DURATION=12s
#   GUARD=/tmp/old/ipam-guard NO_BUILD=1 benches/audit-stall.sh
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/ipam-guard-hot}
INTERVAL=${INTERVAL:-2s}
DURATION=${DURATION:-12s}
GUARD=${GUARD:-target/release/ipam-guard}
LG=target/release/examples/loadgen
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)" >&2; exit 1; }
[ -n "${NO_BUILD:-}" ] || cargo build --release --bin ipam-guard --example loadgen
mkdir -p "$OUT"
[ -d "$OUT/state" ] || $LG --write-state "$OUT/state" 2>&1 | tail -1
[ -f "$OUT/bodies/address_create.json" ] || $LG --write-bodies "$OUT/bodies" 2>&1 | tail -1
export BODY="$OUT/bodies/address_create.json"

run() {
  (. benches/image-env.sh && exec $GUARD serve --dev --shutdown-delay 0s --log-format "$LOG_FORMAT" --cert-dir "$OUT/certs" \
    --state-from "$OUT/state" --listen 127.0.0.1:52000 --probe-listen 127.0.0.1:52001 \
    --metrics-listen 127.0.0.1:52002 "$@" >"$OUT/audit-stall.log" 2>&1) &
  local pid=$!
  until curl -sf http://127.0.0.1:52001/readyz >/dev/null; do
    kill -0 "$pid" || { cat "$OUT/audit-stall.log"; exit 1; }
    sleep 0.5
  done
  sleep 2
  wrk -t1 -c1 -d"$DURATION" --latency -s benches/wrk-review.lua https://localhost:52000/validate |
    grep -E "^ +Latency |^ +(50|90|99)%|Requests/sec"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  echo "audit rounds: $(grep -c 'periodic audit done' "$OUT/audit-stall.log" || true)"
}

echo "== no periodic audit"
run
echo "== --audit-interval $INTERVAL"
run --audit-interval "$INTERVAL"
