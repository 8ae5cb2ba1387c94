//! A workload file as written: unknown keys rejected, defaults filled in
//! for what it leaves out, and the counts it leaves to scaling rules still
//! open. [`Overrides`](crate::Overrides) change it in place; [`RawWorkload::resolve`]
//! then derives the rest into a [`Workload`].

use crate::content::ContentType;
use crate::dist::{count_dist, time_dist, Dist, Quantity};
use crate::lifecycle::LifeCycle;
use crate::model::{
    default_max_head, Aborts, Arrivals, HttpVersion, LinkConfig, RequestMix, RobotConfig,
    ServerConfig, Timeouts, Workload,
};
use crate::popularity::Popularity;
use crate::schedule::Phase;
use crate::validate::show;
use crate::WorkloadError;
use cacheoff_base::{Bytes, Dur, Rate, UnitError};
use serde::{de, Deserialize, Deserializer};
use std::net::Ipv4Addr;
use std::str::FromStr;

/// The peak request rate: a rate, or closed-loop load (`max`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PeakRate {
    PerSecond(Rate),
    /// Each robot sends its next request as soon as a connection is free
    /// (best effort).
    ClosedLoop,
}

impl PeakRate {
    /// The rate, `None` for closed-loop load (as in [`crate::Workload`]).
    pub fn rate(self) -> Option<Rate> {
        match self {
            PeakRate::PerSecond(r) => Some(r),
            PeakRate::ClosedLoop => None,
        }
    }
}

impl From<Rate> for PeakRate {
    fn from(r: Rate) -> PeakRate {
        PeakRate::PerSecond(r)
    }
}

impl FromStr for PeakRate {
    type Err = UnitError;
    /// A rate (`400/s`), or `max` for closed-loop load.
    fn from_str(s: &str) -> Result<PeakRate, UnitError> {
        if s.trim().eq_ignore_ascii_case("max") {
            Ok(PeakRate::ClosedLoop)
        } else {
            s.parse().map(PeakRate::PerSecond)
        }
    }
}

impl<'de> Deserialize<'de> for PeakRate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(de::Error::custom)
    }
}
use std::time::Duration;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RawRobots {
    /// Fixed robot count; otherwise peak rate ÷ `rate`, at most `max_count`.
    pub count: Option<u32>,
    rate: Rate,
    max_count: u32,
    per_host: Option<u32>,
    pub first_ip: Ipv4Addr,
    pub max_conns: u32,
    #[serde(deserialize_with = "count_dist")]
    conn_reuse: Dist,
    backlog: u32,
    max_head: Bytes,
    arrivals: Arrivals,
    pub http10: bool,
    pub http: HttpVersion,
    pub tls: bool,
    pub tls_resume: bool,
    link: Option<LinkConfig>,
}

impl Default for RawRobots {
    fn default() -> Self {
        RawRobots {
            count: None,
            rate: Rate(0.4),
            max_count: 1000,
            per_host: None,
            first_ip: Ipv4Addr::new(127, 1, 0, 1),
            max_conns: 4,
            conn_reuse: Dist::constant(Quantity::Count, 128.0),
            backlog: 64,
            max_head: default_max_head(),
            arrivals: Arrivals::Poisson,
            http10: false,
            http: HttpVersion::Http1,
            tls: false,
            tls_resume: true,
            link: None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RawServers {
    /// Fixed server count; otherwise ⌈peak rate ÷ `rate`⌉ when `rate` is
    /// given, else `per_robot` × robots + `base`.
    pub count: Option<u32>,
    #[serde(deserialize_with = "opt_positive_rate")]
    rate: Option<Rate>,
    per_robot: f64,
    base: u32,
    pub first_ip: Ipv4Addr,
    pub port: u16,
    #[serde(deserialize_with = "time_dist")]
    pub think_time: Dist,
    #[serde(deserialize_with = "opt_count_dist")]
    conn_reuse: Option<Dist>,
    idle_timeout: Dur,
    link: Option<LinkConfig>,
    http10: bool,
}

impl Default for RawServers {
    fn default() -> Self {
        RawServers {
            count: None,
            rate: None,
            per_robot: 0.1,
            base: 500,
            first_ip: Ipv4Addr::new(127, 2, 0, 1),
            port: 0,
            think_time: Dist::constant(Quantity::Time, 0.0),
            conn_reuse: None,
            idle_timeout: Dur::secs(15.0),
            link: None,
            http10: false,
        }
    }
}

fn opt_positive_rate<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Rate>, D::Error> {
    let r = Rate::deserialize(d)?;
    if r.per_sec() > 0.0 {
        Ok(Some(r))
    } else {
        Err(serde::de::Error::custom(format!(
            "rate {r} must be above zero"
        )))
    }
}

fn opt_count_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Dist>, D::Error> {
    count_dist(d).map(Some)
}

/// A workload file as written, with defaults for what it leaves out.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RawWorkload {
    name: String,
    description: String,
    pub seed: u64,
    pub peak_rate: PeakRate,
    pub robots: RawRobots,
    pub servers: RawServers,
    #[serde(deserialize_with = "crate::content::deserialize_content")]
    pub content: Vec<ContentType>,
    pub popularity: Popularity,
    requests: RequestMix,
    aborts: Aborts,
    timeouts: Timeouts,
    interval: Dur,
    pub plateau: Option<Dur>,
    pub cache_size: Option<Bytes>,
    pub fill_rate: Option<Rate>,
    surrogate: bool,
    pub phases: Vec<Phase>,
}

impl Default for RawWorkload {
    fn default() -> Self {
        RawWorkload {
            name: "unnamed".into(),
            description: String::new(),
            seed: 1,
            peak_rate: PeakRate::PerSecond(Rate(400.0)),
            robots: RawRobots::default(),
            servers: RawServers::default(),
            content: vec![ContentType::single(
                "object",
                Dist::exp(Quantity::Size, 13.0 * Bytes::KB as f64),
                0.8,
                LifeCycle::static_two_years(),
            )],
            popularity: Popularity::default(),
            requests: RequestMix::basic_only(),
            aborts: Aborts::default(),
            timeouts: Timeouts::default(),
            interval: Dur::secs(5.0),
            plateau: None,
            cache_size: None,
            fill_rate: None,
            surrogate: false,
            phases: Vec::new(),
        }
    }
}

impl RawWorkload {
    /// Checks the numbers only the scaling rules read, and the counts they
    /// may be given, against their rows of [`crate::ranges`] before
    /// [`resolve`](Self::resolve) derives from them.
    pub(crate) fn check(&self) -> Result<(), WorkloadError> {
        use crate::ranges::{self as r, Range};
        let name = &self.name;
        let fail = |row: &'static Range, value: String| {
            move |why: String| WorkloadError {
                workload: name.clone(),
                param: row.key,
                value,
                why,
            }
        };
        let rate = |row: &'static Range, v: Rate| {
            row.check(v.per_sec())
                .map_err(fail(row, format!("{}/s", show(v.per_sec()))))
        };
        let count = |row: &'static Range, n: u32| {
            row.check_count(n.into()).map_err(fail(row, n.to_string()))
        };
        if let PeakRate::PerSecond(p) = self.peak_rate {
            rate(&r::PEAK_RATE, p)?;
        }
        rate(&r::ROBOT_RATE, self.robots.rate)?;
        if let Some(s) = self.servers.rate {
            rate(&r::SERVER_RATE, s)?;
        }
        if let Some(n) = self.robots.count {
            count(&r::ROBOTS, n)?;
        }
        count(&r::MAX_COUNT, self.robots.max_count)?;
        if let Some(n) = self.servers.count {
            count(&r::SERVERS, n)?;
        }
        count(&r::SERVER_BASE, self.servers.base)?;
        let k = self.servers.per_robot;
        r::PER_ROBOT.check(k).map_err(fail(&r::PER_ROBOT, show(k)))
    }

    /// Scales every phase (and the working-set time or size) so that the plateau
    /// lasts `want`; the nominal plateau is `plateau`, else the last
    /// measured phase. Nothing to scale from: nothing changes.
    pub(crate) fn scale_plateau(&mut self, want: Dur) {
        let nominal = self.plateau.or_else(|| {
            self.phases
                .iter()
                .rev()
                .find(|p| p.measured)
                .map(|p| p.duration)
        });
        let Some(nominal) = nominal.filter(|n| !n.0.is_zero()) else {
            return;
        };
        let k = want.as_secs_f64() / nominal.as_secs_f64();
        // Past what a duration holds, a phase is as long as can be (and
        // refused by its range).
        let scaled =
            |d: Dur| Dur(Duration::try_from_secs_f64(d.as_secs_f64() * k).unwrap_or(Duration::MAX));
        for p in &mut self.phases {
            p.duration = scaled(p.duration);
        }
        if let Some(t) = &mut self.popularity.working_set_time {
            *t = scaled(*t);
        }
        // A working set given in bytes (WebAxe-4's 1 GB) shrinks with the
        // plateau as PolyMix's cap does, so a compressed plateau revisits
        // each object as often as the full one does at the same rate.
        if let Some(b) = &mut self.popularity.working_set_size {
            *b = Bytes((b.0 as f64 * k).round() as u64);
        }
        self.plateau = Some(want);
    }

    /// Applies the scaling rules: robot and server counts the file leaves
    /// open, and the working-set cap from its time or size.
    pub(crate) fn resolve(self) -> Workload {
        let peak_rate = self.peak_rate.rate();
        let (robots, servers) = (self.robots, self.servers);
        let robot_count = robots.count.unwrap_or_else(|| match peak_rate {
            Some(r) if robots.rate.per_sec() > 0.0 => ((r.per_sec() / robots.rate.per_sec()).ceil()
                as u32)
                .clamp(1, robots.max_count.max(1)),
            _ => 100,
        });
        let server_count = servers
            .count
            .unwrap_or_else(|| match (servers.rate, peak_rate) {
                (Some(each), Some(r)) => ((r.per_sec() / each.per_sec()).ceil() as u32).max(1),
                _ => ((servers.per_robot * f64::from(robot_count)).round() as u32)
                    .saturating_add(servers.base),
            });
        let mut popularity = self.popularity;
        if popularity.working_set_cap.is_none() {
            popularity.working_set_cap = match (popularity.working_set_time, peak_rate) {
                (Some(t), Some(r)) => Some((r.per_sec() * t.as_secs_f64()).ceil() as u64),
                _ => popularity.cap_from_size(),
            };
        }
        Workload {
            name: self.name,
            description: self.description,
            seed: self.seed,
            peak_rate,
            robots: RobotConfig {
                count: robot_count,
                per_host: robots.per_host,
                first_ip: robots.first_ip,
                max_conns: robots.max_conns,
                conn_reuse: robots.conn_reuse,
                backlog: robots.backlog,
                max_head: robots.max_head,
                arrivals: robots.arrivals,
                http10: robots.http10,
                http: robots.http,
                tls: robots.tls,
                tls_resume: robots.tls_resume,
                link: robots.link,
            },
            servers: ServerConfig {
                count: server_count,
                first_ip: servers.first_ip,
                port: servers.port,
                think_time: servers.think_time,
                conn_reuse: servers.conn_reuse,
                idle_timeout: servers.idle_timeout,
                link: servers.link,
                http10: servers.http10,
            },
            content: self.content,
            popularity,
            requests: self.requests,
            aborts: self.aborts,
            phases: self.phases,
            plateau: self.plateau,
            cache_size: self.cache_size,
            fill_rate: self.fill_rate,
            surrogate: self.surrogate,
            timeouts: self.timeouts,
            interval: self.interval,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> RawWorkload {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn counts_follow_the_rate_unless_given() {
        // 400/s at 0.4/s per robot: 1000 robots; 0.1 x 1000 + 500 servers.
        let w = raw("").resolve();
        assert_eq!((w.robots.count, w.servers.count), (1000, 600));
        // The derived count stops at max_count; servers follow the robots.
        let w = raw("peak_rate = \"1000/s\"\n[robots]\nmax_count = 2000\n").resolve();
        assert_eq!((w.robots.count, w.servers.count), (2000, 700));
        // Closed-loop load has no rate to derive from.
        let w = raw("peak_rate = \"max\"\n").resolve();
        assert_eq!((w.peak_rate, w.robots.count), (None, 100));
        let w = raw("[robots]\ncount = 7\n[servers]\ncount = 3\n").resolve();
        assert_eq!((w.robots.count, w.servers.count), (7, 3));
    }

    #[test]
    fn the_working_set_cap_follows_its_time_unless_given() {
        let w = raw("peak_rate = \"10/s\"\n[popularity]\nworking_set_time = \"1min\"\n").resolve();
        assert_eq!(w.popularity.working_set_cap, Some(600));
        let w = raw("[popularity]\nworking_set_time = \"1min\"\nworking_set_cap = 5\n").resolve();
        assert_eq!(w.popularity.working_set_cap, Some(5));
    }

    #[test]
    fn the_working_set_cap_may_follow_a_size_in_bytes() {
        // WebAxe-4: 1 GB ÷ 11 KB objects, whatever the rate.
        let w = raw("[popularity]\nworking_set_size = \"1GB\"\n").resolve();
        assert_eq!(w.popularity.working_set_cap, Some(95_325));
        let w = raw("peak_rate = \"max\"\n[popularity]\nworking_set_size = \"1MB\"\nworking_set_object_size = \"1KB\"\n").resolve();
        assert_eq!(w.popularity.working_set_cap, Some(1024));
        let w = raw("[popularity]\nworking_set_size = \"1GB\"\nworking_set_cap = 5\n").resolve();
        assert_eq!(w.popularity.working_set_cap, Some(5));
        // Compressed time shrinks it as it shrinks a working-set time.
        let mut r = raw("plateau = \"4h\"\n[popularity]\nworking_set_size = \"1GB\"\n");
        r.scale_plateau(Dur::secs(60.0));
        let w = r.resolve();
        assert_eq!(w.popularity.working_set_size, Some(Bytes(4_473_924)));
        assert_eq!(w.popularity.working_set_cap, Some(397));
    }

    #[test]
    fn servers_may_follow_the_rate() {
        // WebAxe-4: one origin server per 500 req/s, rounded up.
        let text = |rate: &str| format!("peak_rate = \"{rate}\"\n[servers]\nrate = \"500/s\"\n");
        assert_eq!(raw(&text("200/s")).resolve().servers.count, 1);
        assert_eq!(raw(&text("1000/s")).resolve().servers.count, 2);
        assert_eq!(raw(&text("1001/s")).resolve().servers.count, 3);
        // Closed-loop load has no rate: per_robot and base decide.
        assert_eq!(raw(&text("max")).resolve().servers.count, 510);
        let e = toml::from_str::<RawWorkload>("[servers]\nrate = \"0/s\"\n").unwrap_err();
        assert!(e.message().contains("must be above zero"), "{e}");
    }

    #[test]
    fn the_plateau_scales_from_the_last_measured_phase_or_the_nominal_one() {
        let phases = "[[phases]]\nname = \"a\"\nduration = \"10s\"\n\
                      [[phases]]\nname = \"b\"\nduration = \"20s\"\nmeasured = true\n";
        let mut r = raw(phases);
        r.scale_plateau(Dur::secs(2.0));
        let d: Vec<f64> = r.phases.iter().map(|p| p.duration.as_secs_f64()).collect();
        assert_eq!((d, r.plateau), (vec![1.0, 2.0], Some(Dur::secs(2.0))));

        let mut r = raw(&format!("plateau = \"40s\"\n{phases}"));
        r.scale_plateau(Dur::secs(4.0));
        assert_eq!(r.phases[1].duration, Dur::secs(2.0));

        // No measured phase and no nominal plateau: nothing to scale from.
        let mut r = raw("[[phases]]\nname = \"a\"\nduration = \"10s\"\n");
        r.scale_plateau(Dur::secs(1.0));
        assert_eq!((r.phases[0].duration, r.plateau), (Dur::secs(10.0), None));
    }
}
