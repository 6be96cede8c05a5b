# Sourced (not run) by the bench scripts that start `ipam-guard serve`, from the repository root:
# the processes run with the environment the image gives the binary (Dockerfile's ENV), so a
# figure is the shipped process's. The echo webhook gets it too: both are glibc programs, and
# the ratio compares like with like. A caller's own GLIBC_TUNABLES wins; `GLIBC_TUNABLES=`
# (set, empty) measures glibc's defaults.
if [ -z "${GLIBC_TUNABLES+set}" ]; then
  GLIBC_TUNABLES=$(sed -n 's/^ENV GLIBC_TUNABLES=//p' Dockerfile)
  export GLIBC_TUNABLES
fi
# And the CPU the Deployment gives it: std and tokio read the container's CPU quota, so the
# runtime runs the limit's whole cores as workers, at least one (`resources.limits.cpu: 500m`:
# one worker, checked in the running container by crates/e2e/tests/e2e_image.rs). Both servers get
# that count; a caller's own TOKIO_WORKER_THREADS wins (`TOKIO_WORKER_THREADS=2`: one per core of
# this machine, as the bench ran before 2026-11-27).
cpu_limit=$(awk '/limits:/ { in_limits = 1 } in_limits && $1 == "cpu:" { print $2; exit }' manifests/deployment.yaml)
case $cpu_limit in
  *m) cpu_limit_m=${cpu_limit%m} ;;
  *) cpu_limit_m=$((${cpu_limit%%.*} * 1000)) ;;
esac
if [ -z "${TOKIO_WORKER_THREADS:-}" ]; then
  TOKIO_WORKER_THREADS=$((cpu_limit_m / 1000))
  [ "${TOKIO_WORKER_THREADS:-0}" -ge 1 ] 2>/dev/null || TOKIO_WORKER_THREADS=1
  export TOKIO_WORKER_THREADS
fi
# CPU_LIMIT=deployment also applies the limit itself, as the container runtime does: a CFS quota
# of limits.cpu per 100 ms period, in a cgroup of this process's own (needs root and a writable
# cgroup v2 with the cpu controller, or v1's cpu hierarchy). Both servers get it, so the ratio
# compares like with like at the install's CPU; without it both may use the machine's cores.
if [ "${CPU_LIMIT:-}" = deployment ]; then
  quota_us=$((cpu_limit_m * 100))
  # Empty groups of earlier runs go; rmdir leaves one that still holds a process.
  rmdir /sys/fs/cgroup/ipam-guard-bench-* /sys/fs/cgroup/cpu/ipam-guard-bench-* 2>/dev/null || true
  if grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
    cg=/sys/fs/cgroup/ipam-guard-bench-$BASHPID
    echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
    mkdir -p "$cg" && echo "$quota_us 100000" >"$cg/cpu.max"
  elif [ -d /sys/fs/cgroup/cpu ]; then
    cg=/sys/fs/cgroup/cpu/ipam-guard-bench-$BASHPID
    mkdir -p "$cg" && echo 100000 >"$cg/cpu.cfs_period_us" && echo "$quota_us" >"$cg/cpu.cfs_quota_us"
  else
    echo "CPU_LIMIT=deployment: no cgroup cpu controller to set a quota in" >&2
    exit 1
  fi
  echo "$BASHPID" >"$cg/cgroup.procs"
fi
# And the Deployment's log format (`--log-format=json` in its args): a denial's log line is part
# of what a review costs as shipped. The scripts start `ipam-guard serve` with
# `--log-format "$LOG_FORMAT"`; a caller's own LOG_FORMAT wins (`LOG_FORMAT=text`: as the benches
# ran before 2026-11-27 evening).
if [ -z "${LOG_FORMAT:-}" ]; then
  LOG_FORMAT=$(sed -n 's/^ *- --log-format=//p' manifests/deployment.yaml)
  LOG_FORMAT=${LOG_FORMAT:-text}
  export LOG_FORMAT
fi
