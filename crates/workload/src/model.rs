//! The resolved workload and the built-in workloads.
//!
//! Parameters, their defaults and their checks live here once; the command
//! line only fills [`Overrides`].

use crate::content::{ContentType, Mix};
use crate::dist::{deserialize_dist, Dist, Quantity};
use crate::schedule::{Phase, Schedule};
use cacheoff_base::{Bytes, Dur, Rate};
use serde::{Deserialize, Deserializer, Serialize};
use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

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
}

/// Packet delay and loss of a server's link (both directions).
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

fn size_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Dist, D::Error> {
    deserialize_dist(d, Quantity::Size)
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

/// Which objects robots ask for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Popularity {
    /// Probability that a request revisits an object requested before
    /// (chosen by `model`); otherwise a new object is requested.
    pub recurrence: f64,
    /// How revisits spread over the working set.
    #[serde(default)]
    pub model: PopModel,
    /// Most objects that repeat requests choose from (the most recent
    /// ones, split evenly among workers); `None` means 4M per worker.
    #[serde(default)]
    pub working_set_cap: Option<u64>,
    /// A slice of the working set that gets a share of the repeat requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot_set: Option<HotSet>,
    /// Probability that a revisit takes the smallest cachable object among
    /// the chosen one and its four neighbours (PolyMix-4: 90%).
    #[serde(default)]
    pub bhr_discrimination: f64,
    /// Sets the working-set cap to peak rate x this, when no cap is given
    /// (PolyMix-3: 0.45 x 75% x 4 h); scaled with `--plateau`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_set_time: Option<Dur>,
}

/// How revisits choose among the working set's objects.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum PopModel {
    /// Every object of the working set alike.
    #[default]
    Uniform,
    /// Web Polygraph's zipf(α): the k-th most recently introduced object,
    /// k = floor((n+1)^(U^α)) for a working set of n, so recent objects are
    /// the popular ones (α = 1 gives P(k) = ln((k+1)/k) / ln(n+1)).
    Zipf(f64),
}

impl PopModel {
    /// The 1-based recency rank of a revisited object among `n`, from a
    /// uniform `u` in [0, 1).
    pub fn rank(&self, n: u64, u: f64) -> u64 {
        match *self {
            PopModel::Uniform => (u * n as f64) as u64 + 1,
            PopModel::Zipf(alpha) => ((n + 1) as f64).powf(u.powf(alpha)).floor() as u64,
        }
        .clamp(1, n.max(1))
    }
}

impl fmt::Display for PopModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PopModel::Uniform => f.write_str("unif"),
            PopModel::Zipf(a) => write!(f, "zipf({a})"),
        }
    }
}

impl FromStr for PopModel {
    type Err = String;
    fn from_str(s: &str) -> Result<PopModel, String> {
        let s = s.trim();
        if s == "unif" {
            return Ok(PopModel::Uniform);
        }
        s.strip_prefix("zipf(")
            .and_then(|r| r.strip_suffix(')'))
            .and_then(|a| a.trim().parse::<f64>().ok())
            .filter(|a| a.is_finite() && *a > 0.0)
            .map(PopModel::Zipf)
            .ok_or_else(|| {
                format!("invalid popularity model {s:?}: expected \"unif\" or \"zipf(A)\" with A > 0, e.g. \"zipf(1)\"")
            })
    }
}

impl Serialize for PopModel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PopModel {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// The hot set: `working_set` of the working set gets `requests` of the
/// repeat requests; it jumps to a new place when the working set slides
/// past it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HotSet {
    pub working_set: f64,
    pub requests: f64,
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

/// What the HTTP codec accepts unless told otherwise.
pub fn default_max_head() -> Bytes {
    Bytes(cacheoff_http::MAX_HEAD_LEN as u64)
}

impl Timeouts {
    fn all(&self) -> [(&'static str, Dur); 6] {
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

fn time_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Dist, D::Error> {
    deserialize_dist(d, Quantity::Time)
}
fn count_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Dist, D::Error> {
    deserialize_dist(d, Quantity::Count)
}
fn opt_count_dist<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Dist>, D::Error> {
    Option::<String>::deserialize(d)?
        .map(|s| Dist::parse(Quantity::Count, &s).map_err(serde::de::Error::custom))
        .transpose()
}

/// A workload that fails its checks; names the parameter and the value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("workload {workload:?}: {param} = {value}: {why}")]
pub struct WorkloadError {
    pub workload: String,
    pub param: &'static str,
    pub value: String,
    pub why: String,
}

/// Settings from the command line that override a workload's own.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `Some(None)` asks for closed-loop (best-effort) load.
    pub rate: Option<Option<Rate>>,
    pub robots: Option<u32>,
    pub servers: Option<u32>,
    /// Length of the (last) measured phase.
    pub duration: Option<Dur>,
    /// Length of the first phase, if it is not measured.
    pub warmup: Option<Dur>,
    /// Compress (or stretch) time: every phase is scaled by this over the
    /// workload's nominal plateau.
    pub plateau: Option<Dur>,
    pub cache_size: Option<Bytes>,
    pub fill_rate: Option<Rate>,
    pub seed: Option<u64>,
    pub size: Option<Dist>,
    pub think_time: Option<Dist>,
    pub robot_ips: Option<Ipv4Addr>,
    pub server_ips: Option<Ipv4Addr>,
    pub server_port: Option<u16>,
    pub max_conns: Option<u32>,
}

impl Workload {
    /// Applies the overrides that mean the same for every workload.
    pub fn apply(&mut self, o: &Overrides) {
        if let Some(r) = o.rate {
            self.peak_rate = r;
        }
        if let Some(n) = o.robots {
            self.robots.count = n;
        }
        if let Some(n) = o.servers {
            self.servers.count = n;
        }
        if let Some(s) = o.seed {
            self.seed = s;
        }
        if let Some(d) = &o.size {
            for t in &mut self.content {
                t.size = d.clone();
            }
        }
        if let Some(d) = &o.think_time {
            self.servers.think_time = d.clone();
        }
        if let Some(ip) = o.robot_ips {
            self.robots.first_ip = ip;
        }
        if let Some(ip) = o.server_ips {
            self.servers.first_ip = ip;
        }
        if let Some(p) = o.server_port {
            self.servers.port = p;
        }
        if let Some(n) = o.max_conns {
            self.robots.max_conns = n;
        }
        if let Some(want) = o.plateau {
            let nominal = self.plateau.or_else(|| {
                self.phases
                    .iter()
                    .rev()
                    .find(|p| p.measured)
                    .map(|p| p.duration)
            });
            if let Some(n) = nominal.filter(|n| !n.0.is_zero()) {
                let k = want.as_secs_f64() / n.as_secs_f64();
                for p in &mut self.phases {
                    p.duration = Dur::secs(p.duration.as_secs_f64() * k);
                }
                if let Some(t) = &mut self.popularity.working_set_time {
                    *t = Dur::secs(t.as_secs_f64() * k);
                }
                self.plateau = Some(want);
            }
        }
        if let Some(c) = o.cache_size {
            self.cache_size = Some(c);
        }
        if let Some(f) = o.fill_rate {
            self.fill_rate = Some(f);
        }
        if let (None, Some(t), Some(r)) = (
            self.popularity.working_set_cap,
            self.popularity.working_set_time,
            self.peak_rate,
        ) {
            self.popularity.working_set_cap = Some((r.per_sec() * t.as_secs_f64()).ceil() as u64);
        }
        if let Some(d) = o.duration {
            if let Some(p) = self.phases.iter_mut().rev().find(|p| p.measured) {
                p.duration = d;
            }
        }
        if let Some(d) = o.warmup {
            if let Some(p) = self.phases.first_mut().filter(|p| !p.measured) {
                p.duration = d;
            }
        }
    }

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

    /// Offered document hit ratio implied by the parameters (0..1): the
    /// recurrence times the cachable share of all requests (embedded
    /// objects of a revisited page are revisits too), before the effect of
    /// requests that overlap their object's first fetch.
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

    /// Checks what a run needs beyond a valid workload: the user
    /// parameters a fill goal depends on.
    pub fn check_runnable(&self) -> Result<(), WorkloadError> {
        if self.phases.iter().any(|p| p.goal.is_some()) && self.cache_size.is_none() {
            return Err(WorkloadError {
                workload: self.name.clone(),
                param: "cache_size",
                value: "none".into(),
                why: "this workload fills the cache: give the cache size (--cache-size, e.g. 2GB)"
                    .into(),
            });
        }
        Ok(())
    }

    /// Checks ranges and consistency.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let err = |param: &'static str, value: String, why: &str| WorkloadError {
            workload: self.name.clone(),
            param,
            value,
            why: why.into(),
        };
        if self.robots.count == 0 {
            return Err(err("robots.count", "0".into(), "need at least one robot"));
        }
        if self.servers.count == 0 {
            return Err(err("servers.count", "0".into(), "need at least one server"));
        }
        check_ip_range("robots.first_ip", self.robots.first_ip, self.robots.count)
            .map_err(|why| err("robots.first_ip", self.robots.first_ip.to_string(), &why))?;
        check_ip_range(
            "servers.first_ip",
            self.servers.first_ip,
            self.servers.count,
        )
        .map_err(|why| err("servers.first_ip", self.servers.first_ip.to_string(), &why))?;
        if self.robots.max_conns == 0 {
            return Err(err("robots.max_conns", "0".into(), "must be at least 1"));
        }
        if let Some(r) = self.peak_rate {
            if r.per_sec() <= 0.0 {
                return Err(err("peak_rate", r.to_string(), "must be above zero"));
            }
        }
        Mix::new(&self.content)
            .map_err(|why| err("content", format!("{} types", self.content.len()), &why))?;
        for t in &self.content {
            for (param, v) in [
                ("content.share", t.share),
                ("content.cachable", t.cachable),
                ("content.md5", t.md5),
                ("content.life_cycle.variance", t.life_cycle.variance),
                ("content.life_cycle.with_lmt", t.life_cycle.with_lmt),
            ] {
                if !(0.0..=1.0).contains(&v) {
                    return Err(err(param, format!("{v} ({})", t.name), "must be in 0..1"));
                }
            }
        }
        for (param, v) in [
            ("popularity.recurrence", self.popularity.recurrence),
            (
                "popularity.bhr_discrimination",
                self.popularity.bhr_discrimination,
            ),
            (
                "servers.link.loss",
                self.servers.link.map_or(0.0, |l| l.loss),
            ),
            (
                "popularity.hot_set.working_set",
                self.popularity.hot_set.map_or(0.0, |h| h.working_set),
            ),
            (
                "popularity.hot_set.requests",
                self.popularity.hot_set.map_or(0.0, |h| h.requests),
            ),
            ("requests.basic", self.requests.basic),
            ("requests.ims200", self.requests.ims200),
            ("requests.ims304", self.requests.ims304),
            ("requests.reload", self.requests.reload),
            ("requests.post", self.requests.post),
            ("aborts.robot", self.aborts.robot),
            ("aborts.server", self.aborts.server),
            ("requests.head", self.requests.head),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(err(param, v.to_string(), "must be a probability in 0..1"));
            }
        }
        let sum: f64 = self.requests.shares().iter().sum();
        if (sum - 1.0).abs() > 1e-6 {
            return Err(err(
                "requests",
                format!("{sum}"),
                "request type shares must add up to 1",
            ));
        }
        if self.phases.is_empty() {
            return Err(err("phases", "[]".into(), "need at least one phase"));
        }
        for p in &self.phases {
            if p.duration.0.is_zero() {
                return Err(err(
                    "phases.duration",
                    p.duration.to_string(),
                    "must be above zero",
                ));
            }
            let f = self.fill_factor();
            let share = |v: f64| (0.0..=1.0).contains(&v);
            let recurrence = self.popularity.recurrence;
            let shares = self.requests.shares();
            let special: f64 = shares[1..=3].iter().sum();
            let others: f64 = shares[4..].iter().sum();
            let fits = |k: f64| k >= 0.0 && special * k + others <= 1.0 + 1e-9;
            let load_why = "load factors are shares of the peak rate, from 0 to 1";
            let population_why = "population factors are shares of the robots, from 0 to 1";
            let recurrence_why = "recurrence times its factor must stay a probability, from 0 to 1";
            let special_why = "special factors must not be negative, nor scale the IMS and reload shares past what POST and HEAD leave";
            let checks: [(&'static str, String, bool, &str); 8] = [
                (
                    "phases.load_begin",
                    p.load_begin.to_string(),
                    share(p.load_begin.factor(f)),
                    load_why,
                ),
                (
                    "phases.load_end",
                    p.load_end.to_string(),
                    share(p.load_end.factor(f)),
                    load_why,
                ),
                (
                    "phases.population_begin",
                    p.population_begin.to_string(),
                    share(p.population_begin.factor(f)),
                    population_why,
                ),
                (
                    "phases.population_end",
                    p.population_end.to_string(),
                    share(p.population_end.factor(f)),
                    population_why,
                ),
                (
                    "phases.recurrence_begin",
                    p.recurrence_begin.to_string(),
                    share(recurrence * p.recurrence_begin),
                    recurrence_why,
                ),
                (
                    "phases.recurrence_end",
                    p.recurrence_end.to_string(),
                    share(recurrence * p.recurrence_end),
                    recurrence_why,
                ),
                (
                    "phases.special_begin",
                    p.special_begin.to_string(),
                    fits(p.special_begin),
                    special_why,
                ),
                (
                    "phases.special_end",
                    p.special_end.to_string(),
                    fits(p.special_end),
                    special_why,
                ),
            ];
            if let Some((param, value, _, why)) = checks.into_iter().find(|c| !c.2) {
                return Err(err(param, format!("{value} (phase {:?})", p.name), why));
            }
        }
        if let (Some(f), Some(p)) = (self.fill_rate, self.peak_rate) {
            if f.per_sec() > p.per_sec() {
                return Err(err(
                    "fill_rate",
                    f.to_string(),
                    "must not exceed the peak rate",
                ));
            }
        }
        if self.interval.as_secs_f64() < 0.1 {
            return Err(err(
                "interval",
                self.interval.to_string(),
                "must be at least 100ms",
            ));
        }
        for (name, d) in self.timeouts.all() {
            if d.0.is_zero() {
                return Err(err(name, d.to_string(), "must be above zero"));
            }
        }
        Ok(())
    }
}

fn check_ip_range(_param: &str, first: Ipv4Addr, count: u32) -> Result<(), String> {
    let start = u32::from(first);
    let last = start
        .checked_add(count - 1)
        .ok_or("address range overflows")?;
    let loopback = |a: u32| Ipv4Addr::from(a).is_loopback();
    if !loopback(start) || !loopback(last) {
        return Err(format!(
            "{count} addresses from {first} leave 127.0.0.0/8 (last would be {})",
            Ipv4Addr::from(last)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load;

    #[test]
    fn overrides_apply_and_are_checked() {
        let o = Overrides {
            rate: Some(Some(Rate(100.0))),
            duration: Some(Dur::secs(30.0)),
            seed: Some(9),
            ..Default::default()
        };
        let w = load("simple", &o).unwrap();
        assert_eq!(w.robots.count, 250);
        assert_eq!(w.servers.count, 525);
        assert_eq!(w.phases[1].duration, Dur::secs(30.0));
        assert_eq!(w.seed, 9);
        assert_eq!(w.robot_rate(), Some(0.4));

        let bad = Overrides {
            robots: Some(20_000_000),
            ..Default::default()
        };
        let e = load("simple", &bad).unwrap_err().to_string();
        assert!(e.contains("127.0.0.0/8"), "{e}");
    }

    #[test]
    fn plateau_compresses_every_phase_in_proportion() {
        let o = Overrides {
            plateau: Some(Dur::secs(6.0)),
            ..Default::default()
        };
        // simple: warm 10s, meas 1min (the nominal plateau).
        let w = load("simple", &o).unwrap();
        assert_eq!(w.phases[0].duration, Dur::secs(1.0));
        assert_eq!(w.phases[1].duration, Dur::secs(6.0));
        assert_eq!(w.plateau, Some(Dur::secs(6.0)));
    }

    #[test]
    fn workload_round_trips_through_json() {
        let w = load("simple", &Overrides::default()).unwrap();
        let text = serde_json::to_string(&w).unwrap();
        let back: Workload = serde_json::from_str(&text).unwrap();
        assert_eq!(w, back);
    }

    #[test]
    fn popularity_models_parse_and_print() {
        assert_eq!("unif".parse::<PopModel>().unwrap(), PopModel::Uniform);
        assert_eq!(
            "zipf(0.8)".parse::<PopModel>().unwrap(),
            PopModel::Zipf(0.8)
        );
        assert_eq!(PopModel::Zipf(0.8).to_string(), "zipf(0.8)");
        for bad in ["zipf(0)", "zipf(-1)", "zipf", "pareto(1)"] {
            assert!(bad.parse::<PopModel>().is_err(), "{bad}");
        }
        // Uniform ranks cover 1..=n evenly.
        assert_eq!(PopModel::Uniform.rank(10, 0.0), 1);
        assert_eq!(PopModel::Uniform.rank(10, 0.999_999), 10);
    }

    #[test]
    fn robots_spread_evenly_over_client_hosts() {
        let w = load(
            "polymix-3",
            &Overrides {
                rate: Some(Some(Rate(1000.0))),
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
                rate: Some(Some(Rate(1000.0))),
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
