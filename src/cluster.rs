//! The `ClusterView` the rules read.
