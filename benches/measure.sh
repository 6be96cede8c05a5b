#!/bin/bash
# Takes the figures of docs/performance.md, one output file per figure.
#
#   benches/measure.sh                      # everything, into /tmp/ipam-guard-bench
#   OUT=/tmp/run2 STEPS="lg-1 lg-1-base" benches/measure.sh
#   STEPS="hot hot-wrk hot-cg apiserver" benches/measure.sh   # the hot path (apiserver needs
#                                                    # KUBEBUILDER_ASSETS, hot-wrk needs wrk)
#   IG=/tmp/old/ipam-guard STEPS=rss-state benches/measure.sh   # another build's server, same load
#
# The machine is shared: each output records the load average before and after, and the CPU
# other processes used while it ran (from /proc/stat, minus this step's own user + system time).
# The one-line summary printed per step says the same. Take figures when "others" is near 0.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/ipam-guard-bench}
mkdir -p "$OUT"
cargo build --release --example loadgen --example echo --example gen-state --bin ipam-guard
cargo bench --no-run --bench address --bench index --bench review --bench memory
LG=target/release/examples/loadgen
HZ=$(getconf CLK_TCK)
CORES=$(nproc)

ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9}' /proc/stat; }

step() {
  local name=$1
  shift
  {
    echo "## $name: $*"
    echo "date: $(date -u +%FT%TZ)"
    echo "before: $(cat /proc/loadavg)"
    read -r b0 t0 < <(ticks)
    /usr/bin/time -f "child_cpu %U %S" "$@"
    read -r b1 t1 < <(ticks)
    echo "after: $(cat /proc/loadavg)"
    echo "machine_ticks busy=$((b1 - b0)) total=$((t1 - t0))"
  } > "$OUT/out-$name.txt" 2>&1
  awk -v n="$name" -v hz="$HZ" -v cores="$CORES" '
    /child_cpu/ { c = $2 + $3 }
    /machine_ticks/ {
      split($2, a, "="); split($3, b, "=")
      printf "%s: cores busy %.2f of %d, this step %.2f, others %.2f\n",
        n, a[2] / b[2] * cores, cores, c * hz / b[2] * cores, (a[2] - c * hz) / b[2] * cores
    }' "$OUT/out-$name.txt"
}

IG=${IG:-target/release/ipam-guard}
GEN=target/release/examples/gen-state

# The 210k-object state of `check` at scale (10k pools, 100k claims, 100k addresses), written once.
state() {
  local dir=$OUT/state-$1
  [ -d "$dir" ] || $GEN --pools 10000 --addresses 100000 --format "$1" --out "$dir" >/dev/null
  echo "$dir"
}

# `serve --dev` with the loadgen state (or none): VmRSS once /readyz answers and 5 s after; with
# `load`, once more after the loadgen's 16-connection mix against it.
serve_rss() {
  local port=$1 state=$2 load=${3:-}
  local certs=$OUT/certs-$port
  local args=(serve --dev --shutdown-delay 0s --cert-dir "$certs" --listen "127.0.0.1:$port"
    --probe-listen "127.0.0.1:$((port + 1))" --metrics-listen "127.0.0.1:$((port + 2))")
  [ -n "$state" ] && args+=(--state-from "$state")
  # With the image's environment (benches/image-env.sh); the subshell execs, so $! is the server.
  (. benches/image-env.sh && exec $IG "${args[@]}" --log-format "$LOG_FORMAT" >"$OUT/serve-$port.log" 2>&1) &
  local pid=$!
  until curl -sf "http://127.0.0.1:$((port + 1))/readyz" >/dev/null; do
    kill -0 $pid 2>/dev/null || { cat "$OUT/serve-$port.log"; return 1; }
    sleep 0.2
  done
  echo "ready: $(grep VmRSS /proc/$pid/status)"
  sleep 5
  echo "settled: $(grep -E 'VmRSS|VmHWM' /proc/$pid/status | tr -s ' \n' ' ')"
  if [ -n "$load" ]; then
    $LG --url "https://localhost:$port" --cacert "$certs/ca.crt" --server-pid $pid \
      --connections 16 --requests 100000
    echo "after load: $(grep -E 'VmRSS|VmHWM' /proc/$pid/status | tr -s ' \n' ' ')"
  fi
  kill $pid
  wait $pid || true
}

for s in ${STEPS:-lg-1 lg-1-base lg-16 lg-16-base lg-new lg-new-base lg-16-h2 lg-16-h2-base address index review memory hot hot-wrk hot-cg apiserver check-yaml check-json rss-idle rss-state}; do
  case $s in
    lg-1) step "$s" $LG --connections 1 --requests 20000 ;;
    lg-1-base) step "$s" $LG --baseline --connections 1 --requests 20000 ;;
    lg-16) step "$s" $LG --connections 16 --requests 100000 ;;
    lg-16-base) step "$s" $LG --baseline --connections 16 --requests 100000 ;;
    lg-new) step "$s" $LG --new-connection-per-request --requests 5000 --warmup 500 ;;
    lg-new-base) step "$s" $LG --baseline --new-connection-per-request --requests 5000 --warmup 500 ;;
    lg-16-h2) step "$s" $LG --http2 --connections 16 --requests 100000 ;;
    lg-16-h2-base) step "$s" $LG --baseline --http2 --connections 16 --requests 100000 ;;
    address | index | review | memory) step "$s" cargo bench --bench "$s" ;;
    # ipam-guard serve beside the echo webhook, external processes (wall, 3 runs each).
    hot) step "$s" env OUT="$OUT/hot" NO_BUILD=1 benches/hot-path.sh ;;
    # wrk posting one admitted IPAddress CREATE (3 runs each).
    hot-wrk) step "$s" env OUT="$OUT/hot" NO_BUILD=1 benches/hot-path-wrk.sh ;;
    # Instructions per request of both servers (callgrind).
    hot-cg) step "$s" env OUT="$OUT/hot-cg" NO_BUILD=1 benches/hot-path-callgrind.sh ;;
    # Create latency through a real kube-apiserver, ipam-guard beside the echo.
    apiserver) step "$s" benches/apiserver-latency.sh ;;
    # The decision lock, old build beside new (not in the default steps: set BEFORE).
    lock-ab) step "$s" env OUT="$OUT/lock-ab" NO_BUILD=1 benches/lock-ab.sh ;;
    # `check` at scale: child_cpu and maxrss in the output; run it 3 times for ranges.
    check-yaml | check-json)
      dir=$(state "${s#check-}")
      # Its findings go nowhere; its exit code says whether it found any, not whether it ran.
      # The debug events give each phase's wall and CPU time.
      step "$s" sh -c 'RUST_LOG=ipam_guard=debug /usr/bin/time -f "wall %e s user %U s sys %S s maxrss %M KB" "$0" check "$1" >/dev/null; exit 0' $IG "$dir" ;;
    rss-idle) serve_rss 52100 "" > "$OUT/out-$s.txt" 2>&1; grep -E "ready|settled" "$OUT/out-$s.txt" ;;
    rss-state)
      [ -d "$OUT/lg-state" ] || $LG --write-state "$OUT/lg-state" >/dev/null
      serve_rss 52110 "$OUT/lg-state" load > "$OUT/out-$s.txt" 2>&1
      grep -E "ready|settled|after load|server pid" "$OUT/out-$s.txt" ;;
    *) echo "unknown step $s" >&2; exit 2 ;;
  esac
done
