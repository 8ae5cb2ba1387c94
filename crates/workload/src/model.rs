//! The resolved workload, as the run manifest records it, and the figures
//! that follow from it (per-robot rate, offered hit ratio, schedule).
//!
//! Files become a `Workload` in `raw` (defaults, derived counts) after
//! `overrides` has applied the command line; `validate` checks it.

use crate::content::{ContentType, Mix};
use crate::dist::{count_dist, size_dist, time_dist, Dist, Quantity};
use crate::popularity::Popularity;
use crate::schedule::{Phase, Schedule};
use cacheoff_base::{Bytes, Dur, Rate};
use serde::{Deserialize, Deserializer, Serialize};
use std::net::Ipv4Addr;

/// Everything that defines a run's traffic. Written to the run manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    pub name: String,
    /// One line saying what the workload is.
    #[serde(default)]
    pub description: String,
    /// Seeds every random stream and the object universe.
    pub seed: u64,
    /// Total request rate at load factor 1, spread evenly over the robots;
    /// `None` runs closed-loop: each robot keeps `max_conns` requests in
    /// flight back to back (best effort).
    pub peak_rate: Option<Rate>,
    pub robots: RobotConfig,
    pub servers: ServerConfig,
    /// The content types objects are drawn from.
    pub content: Vec<ContentType>,
    pub popularity: Popularity,
    pub requests: RequestMix,
    /// Transactions deliberately cut short.
    #[serde(default)]
    pub aborts: Aborts,
    pub phases: Vec<Phase>,
    /// Nominal length of the workload's plateau; `--plateau` scales every
    /// phase by the ratio of the two (default: the last measured phase).
    #[serde(default)]
    pub plateau: Option<Dur>,
    /// Capacity of the cache under test (disk + RAM), for fill goals.
    #[serde(default)]
    pub cache_size: Option<Bytes>,
    /// Request rate during the fill phases (`load = "fill"`).
    #[serde(default)]
    pub fill_rate: Option<Rate>,
    /// A surrogate (reverse proxy) workload: by default robots talk to the
    /// proxy as to the origin servers themselves (WebAxe-4), not through
    /// it as a forward proxy.
    #[serde(default)]
    pub surrogate: bool,
    pub timeouts: Timeouts,
    /// Length of a stats interval.
    pub interval: Dur,
}

/// The simulated browsers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RobotConfig {
    pub count: u32,
    /// Most robots per simulated client host (PolyMix-3: 1000, i.e.
    /// 400 req/s); robots are spread evenly over the hosts, and each host
    /// has its own working set. `None`: one host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_host: Option<u32>,
    /// Robot `i` sends from `first_ip + i` (inside 127.0.0.0/8).
    pub first_ip: Ipv4Addr,
    /// Limit on simultaneously open connections per robot.
    pub max_conns: u32,
    /// Transactions per persistent connection before the robot closes it.
    #[serde(deserialize_with = "count_dist")]
    pub conn_reuse: Dist,
    /// Due requests a robot may queue while all its connections are busy;
    /// more are dropped and counted as `backlog_overflow` errors.
    pub backlog: u32,
    /// Largest response header block a robot accepts (`head_too_large`).
    #[serde(default = "default_max_head")]
    pub max_head: Bytes,
    /// How a robot spaces its requests.
    #[serde(default)]
    pub arrivals: Arrivals,
    /// Send HTTP/1.0 requests with `Connection: keep-alive` (PolyMix) rather
    /// than HTTP/1.1.
    #[serde(default)]
    pub http10: bool,
    /// The HTTP version robots speak (HTTP/2: a robot's requests share one
    /// connection per server).
    #[serde(default, skip_serializing_if = "HttpVersion::is_default")]
    pub http: HttpVersion,
    /// Speak HTTPS: TLS to the origin servers, through a `CONNECT` tunnel
    /// of a forward proxy, or to a surrogate.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub tls: bool,
    /// Resume TLS sessions on new connections, as browsers do.
    #[serde(default = "default_tls_resume")]
    pub tls_resume: bool,
    /// WAN emulation on the robots' connections (WebAxe-4's client side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkConfig>,
}

impl RobotConfig {
    /// Number of simulated client hosts.
    pub fn hosts(&self) -> u32 {
        match self.per_host {
            Some(n) if n > 0 => self.count.div_ceil(n).max(1),
            _ => 1,
        }
    }

    /// The client host of robot `robot` (hosts get contiguous, even shares).
    pub fn host_of(&self, robot: u32) -> u32 {
        (u64::from(robot) * u64::from(self.hosts()) / u64::from(self.count.max(1))) as u32
    }
}

fn default_tls_resume() -> bool {
    true
}

/// The HTTP version robots speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum HttpVersion {
    #[default]
    #[serde(rename = "1.1")]
    Http1,
    #[serde(rename = "2")]
    Http2,
}

impl HttpVersion {
    fn is_default(&self) -> bool {
        *self == HttpVersion::Http1
    }
}

impl std::str::FromStr for HttpVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<HttpVersion, String> {
        match s.trim() {
            "1.1" | "1" => Ok(HttpVersion::Http1),
            "2" | "h2" => Ok(HttpVersion::Http2),
            other => Err(format!("{other:?}: the HTTP version is 1.1 or 2")),
        }
    }
}

impl std::fmt::Display for HttpVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            HttpVersion::Http1 => "HTTP/1.1",
            HttpVersion::Http2 => "HTTP/2",
        })
    }
}

/// Request spacing of a robot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Exponential gaps (an open-loop Poisson stream).
    #[default]
    Poisson,
    /// Equal gaps.
    Constant,
}

/// The simulated origin servers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub count: u32,
    /// Server `i` listens on `first_ip + i` (inside 127.0.0.0/8).
    pub first_ip: Ipv4Addr,
    /// Listening port on every server address; 0 picks a free port each.
    pub port: u16,
    /// Delay before a server answers a request.
    #[serde(deserialize_with = "time_dist")]
    pub think_time: Dist,
    /// Transactions per persistent connection before the server closes it;
    /// `None` means no limit.
    #[serde(default, deserialize_with = "opt_count_dist")]
    pub conn_reuse: Option<Dist>,
    /// An idle persistent connection is closed after this long.
    pub idle_timeout: Dur,
    /// WAN emulation on the servers' connections.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkConfig>,
    /// Answer as HTTP/1.0 with keep-alive (PolyMix's servers), not 1.1.
    #[serde(default)]
    pub http10: bool,
}

/// Packet delay and loss of a link (both directions): the servers' side
/// (PolyMix) or the robots' (WebAxe-4), each emulated by its own end.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// One-way delay of every packet.
    pub delay: Dur,
    /// Probability that a packet is lost (costing a retransmission timeout).
    #[serde(default)]
    pub loss: f64,
}

/// Probabilities that a transaction is aborted on purpose: by the robot
/// (it closes the connection once the reply starts) or by the origin server
/// (it closes the connection halfway through the body). Which transactions
/// follows from their ids, so robots know the server's aborts in advance and
/// count them as aborts, not errors.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Aborts {
    pub robot: f64,
    pub server: f64,
}

impl Aborts {
    fn draw(p: f64, key: u64, xact: u64, salt: u64) -> bool {
        p > 0.0 && cacheoff_base::rng::unit_f64(cacheoff_base::rng::mix2(key ^ salt, xact)) < p
    }
    /// Whether the robot aborts transaction `xact` (`key` from the seed).
    pub fn robot_aborts(&self, key: u64, xact: u64) -> bool {
        Self::draw(self.robot, key, xact, 0xA1)
    }
    /// Whether the origin server aborts transaction `xact`.
    pub fn server_aborts(&self, key: u64, xact: u64) -> bool {
        Self::draw(self.server, key, xact, 0xA2)
    }
}

/// Shares of the request types (they add up to 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestMix {
    /// Plain GET; only these count in hit ratios.
    #[serde(default)]
    pub basic: f64,
    /// `If-Modified-Since: LMT - 1s`: the answer must be 200 with a body.
    #[serde(default)]
    pub ims200: f64,
    /// `If-Modified-Since: LMT + 1s`: the answer must be 304.
    #[serde(default)]
    pub ims304: f64,
    /// `Cache-Control: no-cache` and `Pragma: no-cache`: the answer must
    /// come from the origin.
    #[serde(default)]
    pub reload: f64,
    /// POST with a body of `post_body` bytes: the answer must come from
    /// the origin.
    #[serde(default)]
    pub post: f64,
    /// HEAD: the answer has no body.
    #[serde(default)]
    pub head: f64,
    /// Size of POST bodies.
    #[serde(default = "post_body", deserialize_with = "size_dist")]
    pub post_body: Dist,
}

fn post_body() -> Dist {
    Dist::unif(Quantity::Size, 0.0, 8192.0)
}

impl RequestMix {
    pub fn basic_only() -> RequestMix {
        RequestMix {
            basic: 1.0,
            ims200: 0.0,
            ims304: 0.0,
            reload: 0.0,
            post: 0.0,
            head: 0.0,
            post_body: post_body(),
        }
    }

    /// The shares in the order of `RequestType`: basic, ims200, ims304,
    /// reload, post, head.
    pub fn shares(&self) -> [f64; 6] {
        [
            self.basic,
            self.ims200,
            self.ims304,
            self.reload,
            self.post,
            self.head,
        ]
    }
}

/// Limits that keep a misbehaving proxy from stalling the robots.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Timeouts {
    pub connect: Dur,
    /// From the actual send to the first response byte.
    pub first_byte: Dur,
    /// Longest pause between response bytes after the first.
    pub idle: Dur,
    /// Whole transaction, from the actual send to the last body byte.
    pub xact: Dur,
    /// How long transactions in flight may finish when a run ends or is
    /// interrupted; the rest are aborted.
    pub drain: Dur,
    /// Robots close connections idle this long (before servers' idle
    /// timeouts can race with a new request).
    pub keep_alive: Dur,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Dur::secs(5.0),
            first_byte: Dur::secs(20.0),
            idle: Dur::secs(10.0),
            xact: Dur::secs(30.0),
            drain: Dur::secs(30.0),
            keep_alive: Dur::secs(10.0),
        }
    }
}

/// The robots' own limit on a response head; the reference proxy and the
/// HTTP codec have theirs, which need not agree (robots pass this one to
/// the parser).
pub(crate) fn default_max_head() -> Bytes {
    Bytes(64 * Bytes::KB)
}

impl Timeouts {
    /// Every timeout with its parameter name.
    pub(crate) fn all(&self) -> [(&'static str, Dur); 6] {
        [
            ("timeouts.connect", self.connect),
            ("timeouts.first_byte", self.first_byte),
            ("timeouts.idle", self.idle),
            ("timeouts.xact", self.xact),
            ("timeouts.drain", self.drain),
            ("timeouts.keep_alive", self.keep_alive),
        ]
    }
}

fn opt_count_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Dist>, D::Error> {
    Option::<String>::deserialize(d)?
        .map(|s| Dist::parse(Quantity::Count, &s).map_err(serde::de::Error::custom))
        .transpose()
}

impl Workload {
    pub fn schedule(&self) -> Schedule {
        Schedule::new(&self.phases, self.fill_factor())
    }

    /// The fill rate's share of the peak rate (1 when not set).
    pub fn fill_factor(&self) -> f64 {
        match (self.fill_rate, self.peak_rate) {
            (Some(f), Some(p)) if p.per_sec() > 0.0 => f.per_sec() / p.per_sec(),
            _ => 1.0,
        }
    }

    /// The request rate of one robot at load factor 1.
    pub fn robot_rate(&self) -> Option<f64> {
        self.peak_rate
            .map(|r| r.per_sec() / f64::from(self.robots.count.max(1)))
    }

    /// The nominal document hit ratio (0..1): the recurrence times the
    /// cachable share of all requests (embedded objects of a revisited page
    /// are revisits too). An upper bound: worlds without objects cannot
    /// repeat; [`crate::expected_offered`] gives what the plan offers.
    pub fn offered_dhr(&self) -> f64 {
        let direct: f64 = self
            .content
            .iter()
            .filter(|t| !t.embedded_only)
            .map(|t| t.share)
            .sum();
        let (mut hits, mut requests) = (0.0, 0.0);
        for t in self.content.iter().filter(|t| !t.embedded_only) {
            let p = t.share / direct;
            hits += p * t.cachable;
            requests += p;
            if let Some(e) = &t.embeds {
                let n = e.count.mean();
                let c = self
                    .content
                    .iter()
                    .find(|o| o.name == e.type_name)
                    .map_or(0.0, |o| o.cachable);
                hits += p * n * c;
                requests += p * n;
            }
        }
        if requests <= 0.0 {
            return 0.0;
        }
        self.popularity.recurrence * hits / requests
    }

    /// Share of requests that robots plan (the rest are embedded objects
    /// fetched after their pages).
    pub fn direct_share(&self) -> f64 {
        Mix::new(&self.content).map_or(1.0, |m| 1.0 / (1.0 + m.embedded_per_direct(&self.content)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{load, Overrides};

    #[test]
    fn workload_round_trips_through_json() {
        let w = load("simple", &Overrides::default()).unwrap();
        let text = serde_json::to_string(&w).unwrap();
        let back: Workload = serde_json::from_str(&text).unwrap();
        assert_eq!(w, back);
    }

    #[test]
    fn robots_spread_evenly_over_client_hosts() {
        let w = load(
            "polymix-3",
            &Overrides {
                rate: Some(Rate(1000.0).into()),
                ..Default::default()
            },
        )
        .unwrap();
        // 2,500 robots, at most 1,000 per host (400 req/s per host).
        assert_eq!(w.robots.count, 2500);
        assert_eq!(w.robots.hosts(), 3);
        let mut per = [0u32; 3];
        for r in 0..w.robots.count {
            per[w.robots.host_of(r) as usize] += 1;
        }
        assert_eq!(per, [834, 833, 833]);
        let pm4 = load(
            "polymix-4",
            &Overrides {
                rate: Some(Rate(1000.0).into()),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(pm4.robots.hosts(), 2, "500 req/s per host");
        let simple = load("simple", &Overrides::default()).unwrap();
        assert_eq!(simple.robots.hosts(), 1);
        assert_eq!(simple.robots.host_of(simple.robots.count - 1), 0);
    }
}
