//! The range of every number a workload holds, one row per parameter:
//! its key, unit, bounds and why the bounds are what they are. Checks
//! take their row from here ([`Range::check`]): `RawWorkload::check` for
//! the keys only the scaling rules read, `Workload::validate` for the
//! rest, so a value from a file, a `.pg` import or the command line meets
//! the same bound on the one path `workload check` and `run` share.
//! docs/workload-files.md shows every row ([`Range::text`]; a test holds
//! it to them).

use crate::dist::Dist;
use cacheoff_base::{Bytes, Dur, Rate};

/// What a parameter's values measure, for printing its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Requests per second.
    Rate,
    /// A whole number.
    Count,
    /// A plain number (a share, a factor, a weight).
    Number,
    Bytes,
    /// Seconds.
    Time,
}

/// The bounds of one parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// The workload file key (`robots.count`); for a distribution, its
    /// every value (`content.size`).
    pub key: &'static str,
    pub unit: Unit,
    pub min: f64,
    /// The value must be above `min`, not merely at least.
    pub above: bool,
    pub max: f64,
    /// Why the upper bound (or what else holds).
    pub why: &'static str,
}

/// The most requests per second a workload may plan: a run issues each
/// arrival, so a plan beyond what any machine sends only queues requests
/// robots drop (and `1e300/s` never finishes an interval).
pub const MAX_RATE: f64 = 1e6;
/// The most robots: each has its own address, state and connections.
pub const MAX_ROBOTS: f64 = 100_000.0;
const DAY: f64 = 86_400.0;
const YEAR: f64 = 365.0 * DAY;
const TB: f64 = Bytes::TB as f64;
const GB: f64 = Bytes::GB as f64;
const MB: f64 = Bytes::MB as f64;
const KB: f64 = Bytes::KB as f64;

macro_rules! ranges {
    ($($name:ident = $key:literal $unit:ident $op:tt $min:expr, $max:expr, $why:literal;)*) => {
        $(pub const $name: Range = Range {
            key: $key,
            unit: Unit::$unit,
            min: $min,
            above: ranges!(@above $op),
            max: $max,
            why: $why,
        };)*
        /// Every row, in the order docs/workload-files.md shows them.
        pub const ALL: &[Range] = &[$($name),*];
    };
    (@above >) => { true };
    (@above >=) => { false };
}

ranges! {
    PEAK_RATE = "peak_rate" Rate > 0.0, MAX_RATE, "a run issues every planned arrival; more only queues what robots drop";
    FILL_RATE = "fill_rate" Rate > 0.0, MAX_RATE, "and at most the peak rate";
    ROBOT_RATE = "robots.rate" Rate > 0.0, MAX_RATE, "as the peak rate";
    SERVER_RATE = "servers.rate" Rate > 0.0, MAX_RATE, "as the peak rate";
    ROBOTS = "robots.count" Count >= 1.0, MAX_ROBOTS, "each robot has its own address, state and connections";
    MAX_COUNT = "robots.max_count" Count >= 1.0, u32::MAX as f64, "a cap: the count it derives is held to robots.count's range";
    PER_HOST = "robots.per_host" Count >= 1.0, MAX_ROBOTS, "as robots.count";
    MAX_CONNS = "robots.max_conns" Count >= 1.0, 1000.0, "file descriptors: robots × this";
    BACKLOG = "robots.backlog" Count >= 0.0, 1_000_000.0, "requests queued per robot (a queue grown only as a run falls behind)";
    MAX_HEAD = "robots.max_head" Bytes >= KB, 16.0 * MB, "buffered per connection";
    CONN_REUSE = "robots.conn_reuse" Count >= 0.0, 1e9, "every value of the distribution";
    ROBOT_DELAY = "robots.link.delay" Time >= 0.0, 60.0, "a one-way delay";
    ROBOT_LOSS = "robots.link.loss" Number >= 0.0, 1.0, "a probability";
    SERVERS = "servers.count" Count >= 1.0, crate::MAX_SERVERS as f64, "object ids name their server";
    SERVER_BASE = "servers.base" Count >= 0.0, crate::MAX_SERVERS as f64, "as servers.count";
    PER_ROBOT = "servers.per_robot" Number >= 0.0, 100.0, "the count it gives is held to servers.count's range";
    THINK_TIME = "servers.think_time" Time >= 0.0, 3600.0, "every value of the distribution";
    SERVER_REUSE = "servers.conn_reuse" Count >= 0.0, 1e9, "every value of the distribution";
    IDLE_TIMEOUT = "servers.idle_timeout" Time > 0.0, DAY, "a timeout";
    SERVER_DELAY = "servers.link.delay" Time >= 0.0, 60.0, "a one-way delay";
    SERVER_LOSS = "servers.link.loss" Number >= 0.0, 1.0, "a probability";
    TYPES = "content" Count >= 1.0, crate::MAX_TYPES as f64, "content types: object ids name their type";
    SHARE = "content.share" Number >= 0.0, 1.0, "a share";
    SIZE = "content.size" Bytes >= 0.0, TB, "every value of the distribution";
    CACHABLE = "content.cachable" Number >= 0.0, 1.0, "a share";
    MD5 = "content.md5" Number >= 0.0, 1.0, "a share";
    EXT_SHARE = "content.extensions.share" Number >= 0.0, 1.0, "a share";
    LENGTH = "content.life_cycle.length" Time >= 0.0, 100.0 * YEAR, "every value of the distribution";
    VARIANCE = "content.life_cycle.variance" Number >= 0.0, 1.0, "a share of a cycle";
    WITH_LMT = "content.life_cycle.with_lmt" Number >= 0.0, 1.0, "a share";
    MODIFIED_AGO = "content.life_cycle.modified_ago" Time >= 0.0, 100.0 * YEAR, "as a life cycle";
    EMBEDS = "content.embeds.count" Count >= 0.0, crate::MAX_EMBEDDED as f64, "every value of the distribution: object ids number the embedded objects";
    RECURRENCE = "popularity.recurrence" Number >= 0.0, 1.0, "a probability";
    ZIPF = "popularity.model" Number > 0.0, 100.0, "zipf(A)'s A";
    CAP = "popularity.working_set_cap" Count >= 1.0, 1e15, "a count of fill transactions";
    BHR = "popularity.bhr_discrimination" Number >= 0.0, 1.0, "a probability";
    WS_TIME = "popularity.working_set_time" Time > 0.0, YEAR, "as a phase";
    WS_SIZE = "popularity.working_set_size" Bytes > 0.0, 1024.0 * TB, "a working set";
    WS_OBJECT = "popularity.working_set_object_size" Bytes > 0.0, TB, "as content.size";
    HOT_WS = "popularity.hot_set.working_set" Number >= 0.0, 1.0, "a share";
    HOT_REQ = "popularity.hot_set.requests" Number >= 0.0, 1.0, "a share";
    BASIC = "requests.basic" Number >= 0.0, 1.0, "the six shares add up to 1";
    IMS200 = "requests.ims200" Number >= 0.0, 1.0, "a share";
    IMS304 = "requests.ims304" Number >= 0.0, 1.0, "a share";
    RELOAD = "requests.reload" Number >= 0.0, 1.0, "a share";
    POST = "requests.post" Number >= 0.0, 1.0, "a share";
    HEAD = "requests.head" Number >= 0.0, 1.0, "a share";
    POST_BODY = "requests.post_body" Bytes >= 0.0, GB, "every value of the distribution";
    ABORT_ROBOT = "aborts.robot" Number >= 0.0, 1.0, "a probability";
    ABORT_SERVER = "aborts.server" Number >= 0.0, 1.0, "a probability";
    TIMEOUT = "timeouts" Time > 0.0, DAY, "each of connect, first_byte, idle, xact, drain, keep_alive";
    INTERVAL = "interval" Time >= 0.1, 3600.0, "a statistics interval";
    CACHE_SIZE = "cache_size" Bytes > 0.0, 1024.0 * TB, "a cache";
    PLATEAU = "plateau" Time > 0.0, YEAR, "as a phase";
    PHASES = "phases" Count >= 1.0, 1000.0, "phases in a workload";
    DURATION = "phases.duration" Time > 0.0, YEAR, "a phase";
    LOAD = "phases.load_begin" Number >= 0.0, 1.0, "and load_end, population_begin, population_end: shares of the peak";
    RECURRENCE_FACTOR = "phases.recurrence_begin" Number >= 0.0, 1000.0, "and recurrence_end; recurrence × factor stays a probability";
    SPECIAL = "phases.special_begin" Number >= 0.0, 1000.0, "and special_end; the IMS and reload shares scaled stay within what POST and HEAD leave";
    FILL = "phases.goal.fill" Number > 0.0, 1000.0, "cache sizes to fetch";
}

impl Range {
    /// `Err(why)` unless `v` is in range (NaN never is).
    pub fn check(&self, v: f64) -> Result<(), String> {
        let low = if self.above {
            v > self.min
        } else {
            v >= self.min
        };
        if low && v <= self.max {
            Ok(())
        } else {
            Err(format!("must be {} ({})", self.text(), self.why))
        }
    }

    /// Checks a count given as a whole number.
    pub fn check_count(&self, n: u64) -> Result<(), String> {
        self.check(n as f64)
    }

    /// Checks every value a distribution is written with.
    pub fn check_dist(&self, d: &Dist) -> Result<(), String> {
        d.values().into_iter().try_for_each(|v| self.check(v))
    }

    /// The bounds as docs/workload-files.md shows them: `0/s < x ≤ 1000000/s`.
    pub fn text(&self) -> String {
        let op = if self.above { "<" } else { "≤" };
        format!("{} {op} x ≤ {}", self.show(self.min), self.show(self.max))
    }

    fn show(&self, v: f64) -> String {
        match self.unit {
            Unit::Rate => Rate(v).to_string(),
            Unit::Bytes => Bytes(v as u64).to_string(),
            Unit::Time => Dur::secs(v).to_string(),
            Unit::Count | Unit::Number => v.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_hold_and_nan_never_passes() {
        assert!(PEAK_RATE.check(400.0).is_ok());
        for bad in [0.0, -1.0, 1e300, f64::NAN, f64::INFINITY] {
            let e = PEAK_RATE.check(bad).unwrap_err();
            assert!(e.contains("0/s < x ≤ 1000000/s"), "{e}");
        }
        assert!(ROBOTS.check_count(100_000).is_ok());
        assert!(ROBOTS.check_count(100_000_000).is_err());
        assert_eq!(INTERVAL.text(), "100ms ≤ x ≤ 1h");
        assert_eq!(SIZE.text(), "0B ≤ x ≤ 1TB");
    }

    #[test]
    fn docs_show_every_row() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/workload-files.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let rows: Vec<String> = ALL
            .iter()
            .map(|r| format!("| `{}` | {} | {} |", r.key, r.text(), r.why))
            .collect();
        let missing: Vec<&String> = rows.iter().filter(|r| !doc.contains(r.as_str())).collect();
        assert!(
            missing.is_empty(),
            "docs/workload-files.md lacks rows (all of them:)\n{}",
            rows.join("\n")
        );
    }

    #[test]
    fn keys_are_unique() {
        for (i, r) in ALL.iter().enumerate() {
            assert!(ALL[..i].iter().all(|q| q.key != r.key), "{}", r.key);
            assert!(r.min <= r.max && r.max.is_finite(), "{}", r.key);
        }
    }
}
