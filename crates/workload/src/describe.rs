//! The resolved workload in plain English (`cacheoff workload show`, and
//! the report card).

use crate::model::Workload;
use cacheoff_base::Dur;
use std::fmt::Write;
use std::net::Ipv4Addr;

fn pct(v: f64) -> String {
    let s = format!("{:.2}", v * 100.0);
    format!("{}%", s.trim_end_matches('0').trim_end_matches('.'))
}

/// What robots speak, e.g. "HTTP/2 over TLS (sessions resumed)".
fn protocol(r: &crate::model::RobotConfig) -> String {
    let http = if r.http10 {
        "HTTP/1.0 with keep-alive".to_string()
    } else {
        r.http.to_string()
    };
    match (r.tls, r.tls_resume) {
        (false, _) => http,
        (true, true) => format!("{http} over TLS (sessions resumed)"),
        (true, false) => format!("{http} over TLS (a full handshake per connection)"),
    }
}

fn last_ip(first: Ipv4Addr, count: u32) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(first) + count.saturating_sub(1))
}

fn link(l: &crate::LinkConfig) -> String {
    format!(
        "{} one-way delay per packet, {} packet loss (emulated, both directions)",
        l.delay,
        pct(l.loss)
    )
}

/// A multi-line description: parameter tables and the phase table.
pub fn describe(w: &Workload) -> String {
    let mut out = String::new();
    let row = |out: &mut String, k: &str, v: String| {
        let _ = writeln!(out, "  {k:<22} {v}");
    };
    let _ = writeln!(out, "{}: {}", w.name, w.description);
    let _ = writeln!(out, "\nLoad");
    match (w.peak_rate, w.robot_rate()) {
        (Some(r), Some(per)) => row(
            &mut out,
            "peak request rate",
            format!(
                "{r} in total, {:.4}/s per robot ({})",
                per,
                match w.robots.arrivals {
                    crate::Arrivals::Poisson => "Poisson",
                    crate::Arrivals::Constant => "constant intervals",
                }
            ),
        ),
        _ => row(
            &mut out,
            "peak request rate",
            "closed-loop: each connection sends its next request when the last one ends".into(),
        ),
    }
    let r = &w.robots;
    row(
        &mut out,
        "robots",
        format!(
            "{} at {} .. {}; {}; at most {} open connections each, each reused for {} transactions; up to {} waiting requests",
            r.count,
            r.first_ip,
            last_ip(r.first_ip, r.count),
            protocol(r),
            r.max_conns,
            r.conn_reuse,
            r.backlog
        ),
    );
    row(
        &mut out,
        "client hosts",
        match r.per_host {
            Some(n) => format!(
                "{} (at most {n} robots each), each with its own working set",
                r.hosts()
            ),
            None => "1".into(),
        },
    );
    if let Some(l) = &r.link {
        row(&mut out, "client link", link(l));
    }
    if w.surrogate {
        row(
            &mut out,
            "proxy",
            "a surrogate (reverse proxy): robots send to it as to the origin servers, named in Host".into(),
        );
    }
    let s = &w.servers;
    row(
        &mut out,
        "origin servers",
        format!(
            "{} at {} .. {}, port {}; {}; think time {}; connections reused {}, closed after {} idle",
            s.count,
            s.first_ip,
            last_ip(s.first_ip, s.count),
            if s.port == 0 {
                "any free one".to_string()
            } else {
                s.port.to_string()
            },
            if s.http10 {
                "HTTP/1.0 with keep-alive"
            } else {
                "HTTP/1.1"
            },
            s.think_time,
            s.conn_reuse
                .as_ref()
                .map_or("without limit".to_string(), |d| format!(
                    "for {d} transactions"
                )),
            s.idle_timeout
        ),
    );
    if let Some(l) = &s.link {
        row(&mut out, "server link", link(l));
    }
    let _ = writeln!(out, "\nContent");
    for t in &w.content {
        let mut facts = vec![
            format!("{} of the content mix", pct(t.share)),
            format!("size {}", t.size),
            format!("{} cachable", pct(t.cachable)),
        ];
        if t.md5 > 0.0 {
            facts.push(format!("Content-MD5 on {}", pct(t.md5)));
        }
        if !t.extensions.is_empty() {
            let exts: Vec<String> = t
                .extensions
                .iter()
                .map(|e| format!("{} {}", e.ext, pct(e.share)))
                .collect();
            facts.push(format!("extensions {}", exts.join(", ")));
        }
        facts.push(format!(
            "modified every {} (±{} of a cycle), Last-Modified on {}, Expires at the next modification",
            t.life_cycle.length,
            pct(t.life_cycle.variance / 2.0),
            pct(t.life_cycle.with_lmt)
        ));
        if t.embedded_only {
            facts.push("requested only as embedded objects".into());
        }
        if let Some(e) = &t.embeds {
            facts.push(format!(
                "embeds {} {} objects, fetched after the page",
                e.count, e.type_name
            ));
        }
        row(&mut out, &t.name, facts.join("; "));
    }
    let _ = writeln!(out, "\nRequests");
    row(
        &mut out,
        "recurrence",
        format!(
            "{} of requests revisit an earlier object ({}{}{})",
            pct(w.popularity.recurrence),
            match w.popularity.model {
                crate::PopModel::Uniform => "uniform popularity".to_string(),
                crate::PopModel::Zipf(a) => {
                    format!("Zipf popularity zipf({a}), recent objects the most popular")
                }
            },
            w.popularity
                .working_set_cap
                .map_or(String::new(), |c| format!(
                    ", per server and content type; working sets frozen after {c} fill transactions in a phase{}{}",
                    match w.popularity.working_set_size {
                        Some(b) => format!(" ({b} ÷ {})", w.popularity.working_set_object_size),
                        None => String::new(),
                    },
                    if w.robots.hosts() > 1 {
                        " divided among the client hosts"
                    } else {
                        ""
                    }
                )),
            w.popularity.hot_set.map_or(String::new(), |h| format!(
                "; a hot set of {} of the working set gets {} of revisits",
                pct(h.working_set),
                pct(h.requests)
            ))
        ),
    );
    row(
        &mut out,
        "nominal hit ratio",
        format!(
            "{} (recurrence x cachable share; less is offered, as worlds without objects cannot repeat)",
            pct(w.offered_dhr())
        ),
    );
    let q = &w.requests;
    let methods = if q.post > 0.0 || q.head > 0.0 {
        format!(
            ", POST {} (bodies {}), HEAD {}",
            pct(q.post),
            q.post_body,
            pct(q.head)
        )
    } else {
        String::new()
    };
    row(
        &mut out,
        "request types",
        format!(
            "basic {}, ims200 {}, ims304 {}, reload {}{methods}",
            pct(q.basic),
            pct(q.ims200),
            pct(q.ims304),
            pct(q.reload)
        ),
    );
    if w.aborts.robot > 0.0 || w.aborts.server > 0.0 {
        row(
            &mut out,
            "aborts",
            format!(
                "robots abort {} of transactions as the reply starts, servers {} halfway through the body",
                pct(w.aborts.robot),
                pct(w.aborts.server)
            ),
        );
    }
    let _ = writeln!(out, "\nLimits");
    row(
        &mut out,
        "timeouts",
        format!(
            "connect {}, first byte {}, idle {}, whole transaction {}, drain {}, \
             keep-alive {}; statistics every {}",
            w.timeouts.connect,
            w.timeouts.first_byte,
            w.timeouts.idle,
            w.timeouts.xact,
            w.timeouts.drain,
            w.timeouts.keep_alive,
            w.interval
        ),
    );
    row(
        &mut out,
        "response heads",
        format!("at most {}", w.robots.max_head),
    );
    let _ = writeln!(out, "\nPhases");
    let _ = writeln!(
        out,
        "  {:>2}  {:<8} {:>10}  {:<13} {:<13} {:<13} {:<13} notes",
        "#", "name", "duration", "load", "recurrence", "special req.", "robots alive"
    );
    let ramp = |a: f64, b: f64| {
        if a == b {
            pct(a)
        } else {
            format!("{} -> {}", pct(a), pct(b))
        }
    };
    let fill = w.fill_factor();
    for (i, p) in w.phases.iter().enumerate() {
        let mut notes = Vec::new();
        let goal;
        if let Some(g) = &p.goal {
            goal = format!(
                "ends once {} x the cache size ({}) was fetched as cachable misses{}; the duration is a limit",
                g.fill,
                w.cache_size.map_or("not set".to_string(), |c| c.to_string()),
                if g.freeze { " and the working set is full" } else { "" }
            );
            notes.push(goal.as_str());
        }
        if p.measured {
            notes.push("measured");
        }
        if p.dark {
            notes.push("dark: devices under test powered off");
        }
        let line = format!(
            "  {:>2}  {:<8} {:>10}  {:<13} {:<13} {:<13} {:<13} {}",
            i + 1,
            p.name,
            p.duration.to_string(),
            ramp(p.load_begin.factor(fill), p.load_end.factor(fill)),
            ramp(p.recurrence_begin, p.recurrence_end),
            ramp(p.special_begin, p.special_end),
            ramp(
                p.population_begin.factor(fill),
                p.population_end.factor(fill)
            ),
            notes.join(", ")
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let total: f64 = w.phases.iter().map(|p| p.duration.as_secs_f64()).sum();
    let _ = writeln!(out, "  total {}", Dur::secs(total));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{load, Overrides};

    #[test]
    fn describes_every_part_in_words() {
        let d = describe(&load("simple", &Overrides::default()).unwrap());
        for needle in [
            "simple: exp(13KB) objects",
            "400/s in total, 0.4000/s per robot",
            "1000 at 127.1.0.1 .. 127.1.3.232; HTTP/1.1",
            "600 at 127.2.0.1 .. 127.2.2.88",
            "object                 100% of the content mix; size exp(13KB); 80% cachable",
            "68.75% of requests revisit",
            "55% (recurrence x cachable share",
            "basic 100%, ims200 0%",
            "   1  warm            10s  100%          100%          100%          100%",
            "   2  meas           1min  100%          100%          100%          100%          measured",
            "total 70s",
        ] {
            assert!(d.contains(needle), "missing {needle:?} in:\n{d}");
        }
    }

    #[test]
    fn describes_a_surrogate_workload_and_its_client_link() {
        let d = describe(&load("webaxe-4", &Overrides::default()).unwrap());
        for needle in [
            "client link            40ms one-way delay per packet, 0.05% packet loss",
            "proxy                  a surrogate (reverse proxy)",
            "origin servers         1 at 127.2.0.1 .. 127.2.0.1",
            "frozen after 95325 fill transactions in a phase (1GB ÷ 11KB)",
        ] {
            assert!(d.contains(needle), "missing {needle:?} in:\n{d}");
        }
        assert!(!d.contains("server link"), "{d}");
    }
}
