//! `manifest.json`: what was run, where, and by which build.

use cacheoff_workload::Workload;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

pub const MANIFEST_FORMAT: &str = "cacheoff-manifest";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: String,
    pub os: String,
    pub kernel: String,
    pub cpus: usize,
    pub memory_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    pub version: u32,
    pub command_line: Vec<String>,
    pub cacheoff_version: String,
    pub git_revision: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub seed: u64,
    pub proxy: Option<SocketAddr>,
    /// What the proxy under test is (`--label`); absent in older runs.
    #[serde(default)]
    pub label: Option<String>,
    pub workers: usize,
    pub host: Host,
    /// Origin server addresses as bound (ports may have been chosen).
    pub servers: Vec<SocketAddr>,
    /// The fully resolved workload.
    pub workload: Workload,
}
