//! The checks a resolved workload must pass: ranges and consistency, each
//! error naming the parameter and the value (the loader adds the place in
//! the file).

use crate::content::Mix;
use crate::dist::Dist;
use crate::model::Workload;
use crate::ranges::{self as r, Range};
use crate::schedule::Load;
use cacheoff_base::{Bytes, Dur, Rate};
use std::net::Ipv4Addr;

/// A workload that fails its checks; names the parameter and the value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("workload {workload:?}: {param} = {value}: {why}")]
pub struct WorkloadError {
    pub workload: String,
    pub param: &'static str,
    pub value: String,
    pub why: String,
}

/// A phase factor's check: its `_begin` and `_end` parameters, their
/// values as written and as factors, the test each factor must pass, and
/// why.
type Ramp<'a> = (
    [&'static str; 2],
    [(String, f64); 2],
    &'a dyn Fn(f64) -> bool,
    &'static str,
);

impl Workload {
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

    /// Checks ranges (each from its row of [`crate::ranges`]) and
    /// consistency.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let err = |param: &'static str, value: String, why: &str| WorkloadError {
            workload: self.name.clone(),
            param,
            value,
            why: why.into(),
        };
        let c = Check(self);
        if let Some(p) = self.peak_rate {
            c.rate(&r::PEAK_RATE, p)?;
        }
        if let Some(f) = self.fill_rate {
            c.rate(&r::FILL_RATE, f)?;
        }
        let rb = &self.robots;
        c.count(&r::ROBOTS, rb.count.into())?;
        if let Some(n) = rb.per_host {
            c.count(&r::PER_HOST, n.into())?;
        }
        c.count(&r::MAX_CONNS, rb.max_conns.into())?;
        c.count(&r::BACKLOG, rb.backlog.into())?;
        c.bytes(&r::MAX_HEAD, rb.max_head)?;
        c.dist(&r::CONN_REUSE, &rb.conn_reuse, "")?;
        if let Some(l) = rb.link {
            c.time(&r::ROBOT_DELAY, l.delay)?;
            c.number(&r::ROBOT_LOSS, l.loss, "")?;
        }
        let sv = &self.servers;
        c.count(&r::SERVERS, sv.count.into())?;
        c.dist(&r::THINK_TIME, &sv.think_time, "")?;
        if let Some(d) = &sv.conn_reuse {
            c.dist(&r::SERVER_REUSE, d, "")?;
        }
        c.time(&r::IDLE_TIMEOUT, sv.idle_timeout)?;
        if let Some(l) = sv.link {
            c.time(&r::SERVER_DELAY, l.delay)?;
            c.number(&r::SERVER_LOSS, l.loss, "")?;
        }
        check_ip_range(rb.first_ip, rb.count)
            .map_err(|why| err("robots.first_ip", rb.first_ip.to_string(), &why))?;
        check_ip_range(sv.first_ip, sv.count)
            .map_err(|why| err("servers.first_ip", sv.first_ip.to_string(), &why))?;
        let types = self.content.len() as u64;
        r::TYPES
            .check_count(types)
            .map_err(|why| err("content", format!("{types} types"), &why))?;
        Mix::new(&self.content).map_err(|why| err("content", format!("{types} types"), &why))?;
        for t in &self.content {
            let of = format!(" ({})", t.name);
            c.number(&r::SHARE, t.share, &of)?;
            c.dist(&r::SIZE, &t.size, &of)?;
            c.number(&r::CACHABLE, t.cachable, &of)?;
            c.number(&r::MD5, t.md5, &of)?;
            for e in &t.extensions {
                c.number(&r::EXT_SHARE, e.share, &of)?;
            }
            let l = &t.life_cycle;
            c.dist(&r::LENGTH, &l.length, &of)?;
            c.number(&r::VARIANCE, l.variance, &of)?;
            c.number(&r::WITH_LMT, l.with_lmt, &of)?;
            if let Some(d) = l.modified_ago {
                c.time(&r::MODIFIED_AGO, d)?;
            }
            if let Some(e) = &t.embeds {
                c.dist(&r::EMBEDS, &e.count, &of)?;
            }
        }
        let pop = &self.popularity;
        c.number(&r::RECURRENCE, pop.recurrence, "")?;
        if let crate::PopModel::Zipf(a) = pop.model {
            c.number(&r::ZIPF, a, "")?;
        }
        if let Some(n) = pop.working_set_cap {
            c.count(&r::CAP, n)?;
        }
        c.number(&r::BHR, pop.bhr_discrimination, "")?;
        if let Some(t) = pop.working_set_time {
            c.time(&r::WS_TIME, t)?;
        }
        if let Some(b) = pop.working_set_size {
            c.bytes(&r::WS_SIZE, b)?;
        }
        c.bytes(&r::WS_OBJECT, pop.working_set_object_size)?;
        if let Some(h) = pop.hot_set {
            c.number(&r::HOT_WS, h.working_set, "")?;
            c.number(&r::HOT_REQ, h.requests, "")?;
        }
        let q = &self.requests;
        for (row, v) in [
            (&r::BASIC, q.basic),
            (&r::IMS200, q.ims200),
            (&r::IMS304, q.ims304),
            (&r::RELOAD, q.reload),
            (&r::POST, q.post),
            (&r::HEAD, q.head),
        ] {
            c.number(row, v, "")?;
        }
        c.dist(&r::POST_BODY, &q.post_body, "")?;
        c.number(&r::ABORT_ROBOT, self.aborts.robot, "")?;
        c.number(&r::ABORT_SERVER, self.aborts.server, "")?;
        for (name, d) in self.timeouts.all() {
            r::TIMEOUT
                .check(d.as_secs_f64())
                .map_err(|why| err(name, d.to_string(), &why))?;
        }
        c.time(&r::INTERVAL, self.interval)?;
        if let Some(b) = self.cache_size {
            c.bytes(&r::CACHE_SIZE, b)?;
        }
        if let Some(p) = self.plateau {
            c.time(&r::PLATEAU, p)?;
        }
        if rb.http == crate::HttpVersion::Http2 {
            if rb.http10 {
                return Err(err(
                    "robots.http",
                    "\"2\"".into(),
                    "robots.http10 asks for HTTP/1.0: choose one",
                ));
            }
            if rb.link.is_some() {
                return Err(err(
                    "robots.http",
                    "\"2\"".into(),
                    "WAN emulation on the robots' side (robots.link) is not modelled over HTTP/2",
                ));
            }
        }
        if let (Some(t), Some(b)) = (pop.working_set_time, pop.working_set_size) {
            return Err(err(
                "popularity.working_set_size",
                b.to_string(),
                &format!(
                    "give the working set by time (working_set_time = {t}) or by size, not both"
                ),
            ));
        }
        let sum: f64 = self.requests.shares().iter().sum();
        if (sum - 1.0).abs() > 1e-6 {
            return Err(err(
                "requests",
                format!("{sum}"),
                "request type shares must add up to 1",
            ));
        }
        let phases = self.phases.len() as u64;
        r::PHASES
            .check_count(phases)
            .map_err(|why| err("phases", format!("{phases} phases"), &why))?;
        for p in &self.phases {
            let of = format!(" (phase {:?})", p.name);
            r::DURATION
                .check(p.duration.as_secs_f64())
                .map_err(|why| err(r::DURATION.key, format!("{}{of}", p.duration), &why))?;
            if let Some(g) = p.goal {
                c.number(&r::FILL, g.fill, &of)?;
            }
            let fill = self.fill_factor();
            let share = |v: f64| r::LOAD.check(v).is_ok();
            let recurrence = self.popularity.recurrence;
            let shares = self.requests.shares();
            let special: f64 = shares[1..=3].iter().sum();
            let others: f64 = shares[4..].iter().sum();
            let fits = |k: f64| r::SPECIAL.check(k).is_ok() && special * k + others <= 1.0 + 1e-9;
            // Each factor ramps from its `_begin` to its `_end` value; the
            // load and population ones may be "fill", a share of the peak.
            let load = |l: Load| match l {
                Load::Factor(k) => (show(k), k),
                Load::FillRate => (l.to_string(), l.factor(fill)),
            };
            let factor = |k: f64| (show(k), k);
            let ramps: [Ramp; 4] = [
                (
                    ["phases.load_begin", "phases.load_end"],
                    [load(p.load_begin), load(p.load_end)],
                    &share,
                    "load factors are shares of the peak rate, from 0 to 1",
                ),
                (
                    ["phases.population_begin", "phases.population_end"],
                    [load(p.population_begin), load(p.population_end)],
                    &share,
                    "population factors are shares of the robots, from 0 to 1",
                ),
                (
                    ["phases.recurrence_begin", "phases.recurrence_end"],
                    [factor(p.recurrence_begin), factor(p.recurrence_end)],
                    &|k| r::RECURRENCE_FACTOR.check(k).is_ok() && share(recurrence * k),
                    "recurrence times its factor must stay a probability, from 0 to 1",
                ),
                (
                    ["phases.special_begin", "phases.special_end"],
                    [factor(p.special_begin), factor(p.special_end)],
                    &fits,
                    "special factors must not be negative, nor scale the IMS and reload shares past what POST and HEAD leave",
                ),
            ];
            for (names, ends, ok, why) in ramps {
                for (param, (value, v)) in names.into_iter().zip(ends) {
                    if !ok(v) {
                        return Err(err(param, format!("{value} (phase {:?})", p.name), why));
                    }
                }
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
        Ok(())
    }
}

/// Checks values of a workload against their rows, each error naming the
/// row's key and the value as written.
struct Check<'a>(&'a Workload);

impl Check<'_> {
    fn fail(&self, row: &Range, value: String, why: String) -> WorkloadError {
        WorkloadError {
            workload: self.0.name.clone(),
            param: row.key,
            value,
            why,
        }
    }
    fn number(&self, row: &Range, v: f64, of: &str) -> Result<(), WorkloadError> {
        row.check(v)
            .map_err(|why| self.fail(row, format!("{}{of}", show(v)), why))
    }
    fn count(&self, row: &Range, n: u64) -> Result<(), WorkloadError> {
        row.check_count(n)
            .map_err(|why| self.fail(row, n.to_string(), why))
    }
    fn rate(&self, row: &Range, v: Rate) -> Result<(), WorkloadError> {
        row.check(v.per_sec())
            .map_err(|why| self.fail(row, format!("{}/s", show(v.per_sec())), why))
    }
    fn time(&self, row: &Range, d: Dur) -> Result<(), WorkloadError> {
        row.check(d.as_secs_f64())
            .map_err(|why| self.fail(row, d.to_string(), why))
    }
    fn bytes(&self, row: &Range, b: Bytes) -> Result<(), WorkloadError> {
        row.check(b.0 as f64)
            .map_err(|why| self.fail(row, b.to_string(), why))
    }
    fn dist(&self, row: &Range, d: &Dist, of: &str) -> Result<(), WorkloadError> {
        row.check_dist(d).map_err(|why| {
            // A table may have a million entries: show its start.
            let mut text = d.to_string();
            if let Some((cut, _)) = text.char_indices().nth(80) {
                text.truncate(cut);
                text.push('…');
            }
            self.fail(row, format!("{text}{of}"), why)
        })
    }
}

/// A number as short as it reads back, in exponent form when huge.
pub(crate) fn show(v: f64) -> String {
    if v.is_finite() && v.abs() >= 1e15 {
        format!("{v:e}")
    } else {
        v.to_string()
    }
}

/// Whether `count` addresses from `first` stay inside 127.0.0.0/8 (the
/// only network runs may use).
fn check_ip_range(first: Ipv4Addr, count: u32) -> Result<(), String> {
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
    use crate::{load_text, Overrides};

    fn check(text: &str) -> Result<Workload, String> {
        let phase = "[[phases]]\nname = \"a\"\nduration = \"1s\"\n";
        load_text("w.toml", &format!("{text}{phase}"), &Overrides::default())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn links_and_working_set_sizes_are_checked() {
        let w = check("[robots]\nlink = { delay = \"40ms\", loss = 0.0005 }\n").unwrap();
        assert_eq!(w.robots.link.map(|l| l.loss), Some(0.0005));
        let e = check("[robots]\nlink = { delay = \"40ms\", loss = 5 }\n").unwrap_err();
        assert!(e.starts_with("w.toml:2:"), "{e}");
        assert!(
            e.contains("robots.link.loss = 5: must be 0 ≤ x ≤ 1 (a probability)"),
            "{e}"
        );
        let e = check("[popularity]\nworking_set_time = \"1min\"\nworking_set_size = \"1GB\"\n")
            .unwrap_err();
        assert!(
            e.contains("working_set_size = 1GB: give the working set by time"),
            "{e}"
        );
        let e = check("[popularity]\nworking_set_size = \"1GB\"\nworking_set_object_size = 0\n")
            .unwrap_err();
        assert!(
            e.contains("working_set_object_size = 0B: must be 0B < x ≤ 1TB"),
            "{e}"
        );
    }

    #[test]
    fn every_number_meets_its_range() {
        for (text, want) in [
            (
                "peak_rate = \"1e300/s\"\n",
                "w.toml:1:13: peak_rate = 1e300/s: must be 0/s < x ≤ 1000000/s",
            ),
            (
                "fill_rate = \"2e6/s\"\n",
                "w.toml:1:13: fill_rate = 2000000/s: must be 0/s < x",
            ),
            (
                "[robots]\ncount = 100000000\n",
                "w.toml:2:9: robots.count = 100000000: must be 1 ≤ x ≤ 100000",
            ),
            (
                "[robots]\nrate = \"2e6/s\"\n",
                "robots.rate = 2000000/s: must be 0/s < x",
            ),
            (
                "[robots]\nmax_count = 0\n",
                "robots.max_count = 0: must be 1 ≤ x",
            ),
            (
                "[robots]\nbacklog = 4000000000\n",
                "robots.backlog = 4000000000: must be 0 ≤ x ≤ 1000000",
            ),
            (
                "[robots]\nconn_reuse = \"const(1e12)\"\n",
                "robots.conn_reuse = const(1000000000000): must be",
            ),
            (
                "[servers]\nper_robot = nan\n",
                "servers.per_robot = NaN: must be 0 ≤ x ≤ 100",
            ),
            (
                "[servers]\nper_robot = inf\n",
                "servers.per_robot = inf: must be",
            ),
            (
                "[servers]\nthink_time = \"norm(2h,1s)\"\n",
                "servers.think_time = norm(2h,1s): must be 0s ≤ x ≤ 1h",
            ),
            (
                "[popularity]\nmodel = \"zipf(1e9)\"\n",
                "popularity.model = 1000000000: must be 0 < x ≤ 100",
            ),
            (
                "[popularity]\nworking_set_cap = 0\n",
                "popularity.working_set_cap = 0: must be 1 ≤ x",
            ),
            (
                "[timeouts]\nxact = \"2day\"\n",
                "timeouts.xact = 2day: must be 0s < x ≤ 1day",
            ),
            (
                "interval = \"2h\"\n",
                "interval = 2h: must be 100ms ≤ x ≤ 1h",
            ),
            ("cache_size = 0\n", "cache_size = 0B: must be 0B < x"),
            (
                "[requests]\npost_body = \"table(1KB 1, 1KB..2GB 1)\"\n",
                "requests.post_body = table(1KB 1, 1KB..2GB 1): must be 0B ≤ x ≤ 1GB",
            ),
        ] {
            let e = check(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
        let phase = |k: &str| format!("[[phases]]\nname = \"p\"\n{k}\n");
        for (key, want) in [
            (
                "duration = \"400day\"",
                "phases.duration = 400day (phase \"p\"): must be 0s < x ≤ 365day",
            ),
            (
                "duration = \"1s\"\ngoal = { fill = 1e300 }",
                "phases.goal.fill = 1e300 (phase \"p\"): must be 0 < x ≤ 1000",
            ),
            (
                "duration = \"1s\"\nrecurrence_begin = 1e300",
                "phases.recurrence_begin = 1e300 (phase \"p\")",
            ),
        ] {
            let text = format!(
                "cache_size = \"1GB\"\n[popularity]\nrecurrence = 0.0\n{}",
                phase(key)
            );
            let e = load_text("w.toml", &text, &Overrides::default())
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{key}: {e}");
        }
        let many: String = (0..1001).map(|_| phase("duration = \"1s\"")).collect();
        let e = load_text("w.toml", &many, &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("phases = 1001 phases: must be 1 ≤ x ≤ 1000"),
            "{e}"
        );
    }

    #[test]
    fn address_ranges_stay_inside_loopback() {
        assert!(check_ip_range(Ipv4Addr::new(127, 1, 0, 1), 1000).is_ok());
        assert!(check_ip_range(Ipv4Addr::new(127, 255, 255, 255), 1).is_ok());
        let e = check_ip_range(Ipv4Addr::new(127, 255, 255, 255), 2).unwrap_err();
        assert!(e.contains("(last would be 128.0.0.0)"), "{e}");
        let e = check_ip_range(Ipv4Addr::new(10, 0, 0, 1), 1).unwrap_err();
        assert!(e.contains("leave 127.0.0.0/8"), "{e}");
        let e = check_ip_range(Ipv4Addr::new(255, 255, 255, 255), 2).unwrap_err();
        assert_eq!(e, "address range overflows");
    }
}
