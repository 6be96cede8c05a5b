# Sourced (not run) by the bench scripts that start `ipam-guard serve`, from the repository root:
# the processes run with the environment the image gives the binary (Dockerfile's ENV), so a
# figure is the shipped process's. The echo webhook gets it too: both are glibc programs, and
# the ratio compares like with like. A caller's own GLIBC_TUNABLES wins; `GLIBC_TUNABLES=`
# (set, empty) measures glibc's defaults.
if [ -z "${GLIBC_TUNABLES+set}" ]; then
  GLIBC_TUNABLES=$(sed -n 's/^ENV GLIBC_TUNABLES=//p' Dockerfile)
  export GLIBC_TUNABLES
fi
