//! Read-only data every worker sees.

use cacheoff_workload::{Interval, ObjectInfo, ObjectSpace, ObjectTimes, Schedule, Workload};
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
    /// Wall-clock time of `start` in Unix seconds: the epoch of object life
    /// cycles.
    pub epoch: f64,
    pub workers: usize,
    /// Key of the abort decisions (from the seed).
    pub abort_key: u64,
    /// Set once, by the coordinator, when a goal phase ends early.
    pub jump: std::sync::OnceLock<Jump>,
}

/// A goal phase that ended early: after interval `after`, the schedule goes
/// on with interval `to`, and schedule time runs `shift_s` ahead of the
/// clock from schedule time `at_s` on.
#[derive(Debug, Clone, Copy)]
pub struct Jump {
    pub after: u32,
    pub to: u32,
    pub at_s: f64,
    pub shift_s: f64,
}

impl Shared {
    /// Schedule time (phases, intervals) for `real_s` seconds of run time.
    pub fn schedule_s(&self, real_s: f64) -> f64 {
        match self.jump.get() {
            Some(j) if real_s >= j.at_s => real_s + j.shift_s,
            _ => real_s,
        }
    }

    /// Run time for schedule time `sched_s` (inverse of [`schedule_s`]).
    pub fn real_s(&self, sched_s: f64) -> f64 {
        match self.jump.get() {
            Some(j) if sched_s >= j.at_s + j.shift_s => sched_s - j.shift_s,
            _ => sched_s,
        }
    }

    pub fn robot_ip(&self, robot: u32) -> Ipv4Addr {
        Ipv4Addr::from(u32::from(self.wl.robots.first_ip) + robot)
    }

    /// The object's dates now.
    pub fn times_now(&self, o: &ObjectInfo) -> ObjectTimes {
        self.objects.times(o, self.epoch, unix_now())
    }

    /// Seconds since the run start at `t`.
    pub fn secs_at(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.start).as_secs_f64()
    }
}

/// The wall clock in Unix seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}
