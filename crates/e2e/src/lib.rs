//! ipam-guard's end-to-end suites, in a package of their own: the e2e suites are its tests
//! (`crates/e2e/tests/e2e_*.rs`, with their harness in `crates/e2e/tests/e2e/`). They need a real
//! kube-apiserver (`KUBEBUILDER_ASSETS`, `/usr/local/kubebuilder/*/bin`) or docker, and each says
//! on a line that it skipped where there is none. The library holds nothing.
