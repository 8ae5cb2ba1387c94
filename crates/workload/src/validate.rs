//! The checks a resolved workload must pass: ranges and consistency, each
//! error naming the parameter and the value (the loader adds the place in
//! the file).

use crate::content::Mix;
use crate::model::Workload;
use crate::schedule::Load;
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
        check_ip_range(self.robots.first_ip, self.robots.count)
            .map_err(|why| err("robots.first_ip", self.robots.first_ip.to_string(), &why))?;
        check_ip_range(self.servers.first_ip, self.servers.count)
            .map_err(|why| err("servers.first_ip", self.servers.first_ip.to_string(), &why))?;
        if self.servers.count > crate::MAX_SERVERS {
            return Err(err(
                "servers.count",
                self.servers.count.to_string(),
                &format!(
                    "at most {} servers (object ids name them)",
                    crate::MAX_SERVERS
                ),
            ));
        }
        if self.content.len() > crate::MAX_TYPES {
            return Err(err(
                "content",
                format!("{} types", self.content.len()),
                &format!("at most {} content types", crate::MAX_TYPES),
            ));
        }
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
            ("robots.link.loss", self.robots.link.map_or(0.0, |l| l.loss)),
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
        let r = &self.robots;
        if r.http == crate::HttpVersion::Http2 {
            if r.http10 {
                return Err(err(
                    "robots.http",
                    "\"2\"".into(),
                    "robots.http10 asks for HTTP/1.0: choose one",
                ));
            }
            if r.link.is_some() {
                return Err(err(
                    "robots.http",
                    "\"2\"".into(),
                    "WAN emulation on the robots' side (robots.link) is not modelled over HTTP/2",
                ));
            }
        }
        let pop = &self.popularity;
        if let (Some(t), Some(b)) = (pop.working_set_time, pop.working_set_size) {
            return Err(err(
                "popularity.working_set_size",
                b.to_string(),
                &format!(
                    "give the working set by time (working_set_time = {t}) or by size, not both"
                ),
            ));
        }
        if pop.working_set_size.is_some() && pop.working_set_object_size.0 == 0 {
            return Err(err(
                "popularity.working_set_object_size",
                "0B".into(),
                "must be above zero (the working set's size is counted in objects of this size)",
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
            let fill = self.fill_factor();
            let share = |v: f64| (0.0..=1.0).contains(&v);
            let recurrence = self.popularity.recurrence;
            let shares = self.requests.shares();
            let special: f64 = shares[1..=3].iter().sum();
            let others: f64 = shares[4..].iter().sum();
            let fits = |k: f64| k >= 0.0 && special * k + others <= 1.0 + 1e-9;
            // Each factor ramps from its `_begin` to its `_end` value; the
            // load and population ones may be "fill", a share of the peak.
            let load = |l: Load| (l.to_string(), l.factor(fill));
            let factor = |k: f64| (k.to_string(), k);
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
                    &|k| share(recurrence * k),
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
            e.contains("robots.link.loss = 5: must be a probability"),
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
            e.contains("working_set_object_size = 0B: must be above zero"),
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
