//! Read-only data every worker sees.

use cacheoff_workload::{Interval, ObjectSpace, Schedule, Workload};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Instant;

pub struct Shared {
    pub wl: Workload,
    pub objects: ObjectSpace,
    pub schedule: Schedule,
    pub intervals: Vec<Interval>,
    /// Origin server addresses, by server index.
    pub servers: Vec<SocketAddr>,
    /// `ip:port` of each server, for URLs and Host headers.
    pub server_hosts: Vec<String>,
    pub proxy: Option<SocketAddr>,
    /// The run's time zero.
    pub start: Instant,
    /// `Last-Modified` and `Expires` of the static life cycle: a year before
    /// and after the run start.
    pub last_modified: String,
    pub expires: String,
}

impl Shared {
    pub fn robot_ip(&self, robot: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.wl.robots.first_ip) + robot)
    }

    /// Seconds since the run start at `t`.
    pub fn secs_at(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.start).as_secs_f64()
    }
}
