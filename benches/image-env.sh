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
# one worker, checked in the running container by tests/e2e_image.rs). Both servers get that
# count; a caller's own TOKIO_WORKER_THREADS wins (`TOKIO_WORKER_THREADS=2`: one per core of
# this machine, as the bench ran before 2026-11-27).
if [ -z "${TOKIO_WORKER_THREADS:-}" ]; then
  cpu_limit=$(awk '/limits:/ { in_limits = 1 } in_limits && $1 == "cpu:" { print $2; exit }' manifests/deployment.yaml)
  case $cpu_limit in
    *m) TOKIO_WORKER_THREADS=$((${cpu_limit%m} / 1000)) ;;
    *) TOKIO_WORKER_THREADS=${cpu_limit%%.*} ;;
  esac
  [ "${TOKIO_WORKER_THREADS:-0}" -ge 1 ] 2>/dev/null || TOKIO_WORKER_THREADS=1
  export TOKIO_WORKER_THREADS
fi
