//! What every worker of a run reads: the workload, the object universe,
//! the time line and the addresses.
//!
//! Ownership: built by the coordinator before the workers start, then
//! shared read-only behind an `Arc`. The one thing that changes during a
//! run, a goal phase ending early, belongs to the [`Timeline`] and is
//! written by the coordinator alone.

use crate::timeline::Timeline;
use cacheoff_workload::{ObjectInfo, ObjectSpace, ObjectTimes, Workload};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Instant;

/// How robots reach the origin servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// Straight to each server (the baseline).
    Direct,
    /// Through a forward proxy: absolute URIs.
    Proxy(SocketAddr),
    /// To a surrogate (reverse proxy): origin-form requests whose `Host`
    /// names the server (`cacheoff_workload::AddrMap`).
    Surrogate(SocketAddr),
}

impl Via {
    /// The one address every robot connection goes to, if not direct.
    pub fn addr(self) -> Option<SocketAddr> {
        match self {
            Via::Direct => None,
            Via::Proxy(a) | Via::Surrogate(a) => Some(a),
        }
    }
}

pub struct Shared {
    pub workload: Workload,
    pub objects: ObjectSpace,
    pub timeline: Timeline,
    /// Origin server addresses, by server index.
    pub servers: Vec<SocketAddr>,
    /// What robots name each server by in URLs and Host headers: `ip:port`,
    /// or in surrogate mode its name in the address map.
    pub server_hosts: Vec<String>,
    pub via: Via,
    /// The run's time zero.
    pub start: Instant,
    /// Wall-clock time of `start` in Unix seconds of the run's clock: the
    /// epoch of object life cycles.
    pub epoch: f64,
    /// This host's clock minus the run's (a host of many: the
    /// coordinator's), so every host dates objects alike.
    pub clock_offset_s: f64,
    /// How far the hosts' object clocks may still differ: a reply dated
    /// this much before the request is not stale.
    pub clock_slack_s: f64,
    /// The run's robot workers (on every host).
    pub workers: usize,
    /// One address for all of this host's robots (a host of many).
    pub robot_ip: Option<Ipv4Addr>,
    /// Key of the abort decisions (from the seed).
    pub abort_key: u64,
    /// The trace replayed instead of the plan.
    pub trace: Option<crate::TraceFeed>,
    /// With a test CA: origin servers take TLS, robots speak it when the
    /// workload asks.
    pub tls: Option<Tls>,
}

/// The run's TLS: robots trust the run's CA alone; origin servers
/// present the certificate it signed.
pub struct Tls {
    pub client: std::sync::Arc<cacheoff_tls::ClientConfig>,
    pub server: std::sync::Arc<cacheoff_tls::ServerConfig>,
}

impl Tls {
    /// Robots offer the workload's HTTP version over ALPN and resume
    /// sessions as it says.
    pub fn new(pki: &cacheoff_tls::Pki, w: &Workload) -> Result<Tls, cacheoff_tls::TlsError> {
        let alpn = match w.robots.http {
            cacheoff_workload::HttpVersion::Http1 => cacheoff_tls::ALPN_HTTP1,
            cacheoff_workload::HttpVersion::Http2 => cacheoff_tls::ALPN_H2,
        };
        Ok(Tls {
            client: cacheoff_tls::client_config(&pki.ca, &[alpn], w.robots.tls_resume)?,
            server: cacheoff_tls::server_config(pki)?,
        })
    }
}

impl Shared {
    pub fn robot_ip(&self, robot: u32) -> Ipv4Addr {
        self.robot_ip
            .unwrap_or_else(|| Ipv4Addr::from(u32::from(self.workload.robots.first_ip) + robot))
    }

    /// The object's dates now.
    pub fn times_now(&self, o: &ObjectInfo) -> ObjectTimes {
        self.times_at(o, self.run_unix_now())
    }

    pub fn times_at(&self, o: &ObjectInfo, unix: f64) -> ObjectTimes {
        self.objects.times(o, self.epoch, unix)
    }

    /// Now, in Unix seconds of the run's clock.
    pub fn run_unix_now(&self) -> f64 {
        unix_now() - self.clock_offset_s
    }

    /// Seconds of run time at `t`.
    pub fn secs_at(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.start).as_secs_f64()
    }

    /// Schedule time (phases, factors) at `t`.
    pub fn schedule_s_at(&self, t: Instant) -> f64 {
        self.timeline.schedule_s(self.secs_at(t))
    }
}

/// The wall clock in Unix seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
