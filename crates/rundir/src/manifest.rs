//! `manifest.json`: what was run, where, and by which build.

use crate::files::FORMAT_VERSION;
use cacheoff_workload::Workload;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::time::SystemTime;

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
    /// UTC, RFC 3339 to the millisecond (to the second before format 2),
    /// to line a run up with a proxy's log.
    pub started_at: String,
    pub finished_at: Option<String>,
    pub seed: u64,
    pub proxy: Option<SocketAddr>,
    /// How robots reached the servers; absent in older runs (then
    /// [`Manifest::mode`] tells it from `proxy`).
    #[serde(default, rename = "mode", skip_serializing_if = "Option::is_none")]
    pub via_mode: Option<Mode>,
    /// What the proxy under test is (`--label`); absent in older runs.
    #[serde(default)]
    pub label: Option<String>,
    pub workers: usize,
    pub host: Host,
    /// Origin server addresses as bound (ports may have been chosen).
    pub servers: Vec<SocketAddr>,
    /// The fully resolved workload.
    pub workload: Workload,
    /// A run many hosts ran (`--agents`): its agents and their shares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<Vec<crate::AgentRecord>>,
    /// The product whose spending the run sampled (a cgroup or a pid and
    /// its descendants, with where each figure came from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watched: Option<String>,
}

/// How robots reached the origin servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// No proxy: the baseline.
    Direct,
    /// Through a forward proxy (absolute URIs).
    Forward,
    /// To a surrogate (origin-form requests, servers named in `Host`).
    Reverse,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::Forward => "forward",
            Mode::Reverse => "reverse",
        }
    }
}

/// Which build is running, for the manifest.
#[derive(Debug, Clone)]
pub struct Build {
    pub version: String,
    pub git_revision: String,
}

impl Manifest {
    /// The manifest of a run starting now on this machine; the servers are
    /// filled in once bound.
    pub fn new(
        workload: Workload,
        mode: Mode,
        proxy: Option<SocketAddr>,
        label: Option<String>,
        workers: usize,
        command_line: &[String],
        build: &Build,
    ) -> Manifest {
        Manifest {
            format: MANIFEST_FORMAT.into(),
            version: FORMAT_VERSION,
            command_line: command_line.to_vec(),
            cacheoff_version: build.version.clone(),
            git_revision: build.git_revision.clone(),
            started_at: now_rfc3339(),
            finished_at: None,
            seed: workload.seed,
            proxy,
            via_mode: Some(mode),
            label,
            workers,
            host: Host::probe(),
            servers: Vec::new(),
            workload,
            agents: None,
            watched: None,
        }
    }
}

impl Manifest {
    /// How robots reached the servers (older runs: forward if they had a
    /// proxy).
    pub fn mode(&self) -> Mode {
        self.via_mode.unwrap_or(if self.proxy.is_some() {
            Mode::Forward
        } else {
            Mode::Direct
        })
    }
}

impl Host {
    /// What this machine is.
    pub fn probe() -> Host {
        let read = |p: &str| {
            std::fs::read_to_string(p)
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unknown".into())
        };
        let memory_bytes = std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|m| {
                m.lines()
                    .find(|l| l.starts_with("MemTotal:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|kb| kb.parse::<u64>().ok())
            })
            .map_or(0, |kb| kb * 1024);
        Host {
            hostname: read("/proc/sys/kernel/hostname"),
            os: std::env::consts::OS.into(),
            kernel: read("/proc/sys/kernel/osrelease"),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_bytes,
        }
    }
}

/// The current UTC time, to the millisecond (RFC 3339).
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}
