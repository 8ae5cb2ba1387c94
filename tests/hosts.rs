//! Runs over many hosts (docs/testing.md): agents on this machine's
//! loopback, and hosts in network namespaces.

mod support;

mod fleet;
mod netns;
