//! The page's head: what was run, and the headline figures with the
//! cache-off's verdicts on them.

use super::tables::latency_cells;
use super::{esc, ms, pct};
use crate::{Run, RunState};
use cacheoff_stats::{Entry, RtClock};
use std::fmt::Write;

use cacheoff_rundir::rules::{judge, Facts, Rule};
pub use cacheoff_rundir::rules::{Verdict, MAX_ERROR_PERCENT, MIN_DHR_PERCENT, MIN_TIME_WAIT_S};

/// The cache-off's rules on a run (`cacheoff_rundir::rules`, as its exit
/// status and the executive summary judge it); the MSL test only where
/// one was run.
pub fn verdicts(f: &Facts) -> Vec<(Rule, Verdict)> {
    judge(f)
        .into_iter()
        .filter(|(r, _)| *r != Rule::Msl || f.msl.is_some())
        .collect()
}

/// A run over many hosts: its agents, and a banner when one was lost.
fn agents_banner(o: &mut String, run: &Run) {
    let agents = run
        .summary
        .as_ref()
        .and_then(|s| s.agents.as_ref())
        .or(run.manifest.agents.as_ref());
    let Some(agents) = agents else {
        return;
    };
    if cacheoff_rundir::partial(agents) {
        let lost: Vec<String> = agents
            .iter()
            .filter(|a| a.state == cacheoff_rundir::AgentState::Lost)
            .map(|a| {
                format!(
                    "{} (robots {}, servers {}..{}) at {:.1} s",
                    a.addr,
                    a.share,
                    a.servers[0],
                    a.servers[1],
                    a.lost_at_s.unwrap_or(0.0)
                )
            })
            .collect();
        let _ = write!(
            o,
            "<div class=\"banner\" id=\"partial\"><strong>This run is partial:</strong> agent {} lost; its share is missing from then on.</div>",
            esc(&lost.join(", "))
        );
    }
    let _ = write!(
        o,
        "<table id=\"agents\"><thead><tr><th>agent</th><th>role</th><th>robots</th><th>servers</th><th>clock offset</th><th>state</th></tr></thead><tbody>"
    );
    for a in agents {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}..{}</td><td>{:+.2} ms</td><td>{}</td></tr>",
            esc(&a.addr),
            esc(&a.role),
            esc(&a.share),
            a.servers[0],
            a.servers[1],
            a.clock_offset_ms,
            match a.state {
                cacheoff_rundir::AgentState::Complete => "complete",
                cacheoff_rundir::AgentState::Lost => "lost",
                cacheoff_rundir::AgentState::Running => "running",
            }
        );
    }
    o.push_str("</tbody></table>");
}

/// The document head, the title, a banner for a run that did not complete,
/// and what was run where.
pub(super) fn header(o: &mut String, run: &Run) {
    let m = &run.manifest;
    let title = format!(
        "cacheoff report: {} via {}",
        m.workload.name,
        m.label
            .clone()
            .or(m.proxy.map(|p| p.to_string()))
            .unwrap_or_else(|| "no proxy".into())
    );
    let _ = write!(
        o,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{}</title><style>{}</style></head><body><main>",
        esc(&title),
        super::STYLE
    );
    let _ = write!(
        o,
        "<h1>{}</h1><p class=\"sub\">{}</p>",
        esc(&format!("{} report card", m.workload.name)),
        esc(&m.workload.description)
    );
    let state = run.state();
    if state != RunState::Complete {
        let _ = write!(
            o,
            "<div class=\"banner\" id=\"state\" data-state=\"{}\"><strong>This run is {}.</strong></div>",
            match state {
                RunState::Interrupted => "interrupted",
                _ => "no-summary",
            },
            esc(state.describe())
        );
    }
    agents_banner(o, run);
    let duration = run.intervals.last().map_or(0.0, |r| r.end_s);
    o.push_str("<dl class=\"meta\">");
    for (k, v) in [
        ("workload", m.workload.name.clone()),
        ("proxy under test", run.proxy_label()),
        ("started", m.started_at.clone()),
        (
            "finished",
            m.finished_at
                .clone()
                .unwrap_or_else(|| "not recorded".into()),
        ),
        ("duration", format!("{duration:.0} s")),
        ("command line", m.command_line.join(" ")),
        (
            "cacheoff",
            format!("{} ({})", m.cacheoff_version, m.git_revision),
        ),
        ("seed", m.seed.to_string()),
        (
            "host",
            format!(
                "{}, {} {}, {} CPUs, {:.1} GiB",
                m.host.hostname,
                m.host.os,
                m.host.kernel,
                m.host.cpus,
                m.host.memory_bytes as f64 / (1u64 << 30) as f64
            ),
        ),
        (
            "robots / servers",
            format!(
                "{} robots, {} origin servers, {} workers",
                m.workload.robots.count, m.workload.servers.count, m.workers
            ),
        ),
    ] {
        let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v));
    }
    o.push_str("</dl>");
}

fn card(o: &mut String, k: &str, v: &str, d: &str) {
    let _ = write!(
        o,
        r#"<div class="card"><div class="k">{}</div><div class="v">{}</div><div class="d">{}</div></div>"#,
        esc(k),
        esc(v),
        esc(d)
    );
}

/// The headline figures of `head` (the `measured` phase, or the whole
/// run): cards, the verdicts and the response times on both clocks.
pub(super) fn figures(o: &mut String, head: &Entry, measured: Option<&str>, facts: &Facts) {
    let _ = write!(
        o,
        "<h2 id=\"summary\">Headline figures ({})</h2><div class=\"cards\">",
        esc(&measured.map_or("whole run".into(), |p| format!("phase {p}")))
    );
    let rt_cards = RtClock::ALL.iter().map(|&c| {
        let rt = head.rt(c);
        (
            format!("response time, {}", c.description()),
            format!("{} ms", ms(rt.all.mean)),
            format!(
                "hits {} · misses {} · p99 {} ms",
                ms(rt.hit.mean),
                ms(rt.miss.mean),
                ms(rt.all.p99)
            ),
        )
    });
    let throughput = (
        "throughput".to_string(),
        format!("{:.1}/s", head.rate_xps),
        format!("{} replies", head.xacts),
    );
    for (k, v, d) in std::iter::once(throughput).chain(rt_cards).chain([
        (
            "document hit ratio".to_string(),
            pct(head.dhr.measured),
            format!(
                "offered {}, an ideal cache {}",
                pct(head.dhr.offered),
                pct(head.dhr.ideal)
            ),
        ),
        (
            "byte hit ratio".to_string(),
            pct(head.bhr.measured),
            format!(
                "offered {}, an ideal cache {}",
                pct(head.bhr.offered),
                pct(head.bhr.ideal)
            ),
        ),
        (
            "errors".to_string(),
            pct(head.errors.percent),
            format!("{} of {} requests", head.errors.total, head.sent),
        ),
    ]) {
        card(o, &k, &v, &d);
    }
    o.push_str("</div>");
    o.push_str("<table id=\"verdict\"><thead><tr><th>cache-off rule</th><th>result</th><th>why</th></tr></thead><tbody>");
    for (rule, v) in verdicts(facts) {
        let (class, word, why) = match v {
            Verdict::Pass(w) => ("pass", "pass", w),
            Verdict::Fail(w) => ("fail", "fail", w),
            Verdict::NotApplicable(w) => ("na", "n/a", w),
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=\"{class}\">{word}</td><td style=\"text-align:left\">{}</td></tr>",
            esc(rule.name()),
            esc(&why)
        );
    }
    o.push_str("</tbody></table>");
    response_times(o, head);
}

/// Response times of hits, all and misses on both clocks, side by side.
fn response_times(o: &mut String, head: &Entry) {
    o.push_str("<table id=\"response-times\"><thead><tr><th rowspan=\"2\">response time, ms</th>");
    for c in RtClock::ALL {
        let _ = write!(
            o,
            "<th colspan=\"3\" data-clock=\"{}\" style=\"text-align:center;white-space:normal\">{}</th>",
            c.name(),
            esc(c.description())
        );
    }
    o.push_str("<th rowspan=\"2\">replies</th></tr><tr>");
    for _ in RtClock::ALL {
        o.push_str("<th>mean</th><th>p50</th><th>p99</th>");
    }
    o.push_str("</tr></thead><tbody>");
    type Pick = fn(&cacheoff_stats::LatencySet) -> &cacheoff_stats::Latency;
    let rows: [(&str, Pick); 3] = [
        ("hits", |s| &s.hit),
        ("all", |s| &s.all),
        ("misses", |s| &s.miss),
    ];
    for (k, pick) in rows {
        let _ = write!(o, "<tr><td>{k}</td>");
        for c in RtClock::ALL {
            o.push_str(&latency_cells(pick(head.rt(*c))));
        }
        let _ = write!(o, "<td>{}</td></tr>", pick(&head.rt_ms).count);
    }
    o.push_str("</tbody></table>");
}

#[cfg(test)]
mod tests {
    use super::super::sample;
    use super::*;
    use cacheoff_rundir::Mode;

    #[test]
    fn headline_shows_the_figures_and_judges_them() {
        // 30 hits, 10 misses, 1 error in 41 requests: 2.4% errors.
        let e = sample::entry("meas", 30, 10, 1);
        let mut o = String::new();
        let fwd = |e: &Entry| Facts::of_figures(e, Mode::Forward, false);
        figures(&mut o, &e, Some("meas"), &fwd(&e));
        assert!(o.contains("Headline figures (phase meas)"));
        assert!(o.contains("4.0/s") && o.contains("40 replies"), "{o}");
        assert!(o.contains(">75.0%<") && o.contains("offered 75.0%"), "{o}");
        assert!(
            o.contains(">2.4%<") && o.contains("1 of 41 requests"),
            "{o}"
        );
        // Both clocks, each named: means of 2 ms hits, 10 ms misses, 4 ms
        // over all from the intended start; half that from the connection.
        let card = |clock: RtClock| {
            let k = format!(
                "<div class=\"k\">response time, {}</div>",
                clock.description()
            );
            let at = o.find(&k).unwrap_or_else(|| panic!("no card {k} in {o}")) + k.len();
            o[at..at + o[at..].find("</div></div>").unwrap()].to_string()
        };
        assert_eq!(
            card(RtClock::Intended),
            "<div class=\"v\">4.00 ms</div><div class=\"d\">hits 2.00 · misses 10.0 · p99 10.0 ms"
        );
        assert_eq!(
            card(RtClock::Polygraph),
            "<div class=\"v\">2.00 ms</div><div class=\"d\">hits 1.00 · misses 5.00 · p99 5.00 ms"
        );
        // The table sets the clocks side by side, the intended start first.
        let table = &o[o.find("id=\"response-times\"").unwrap()..];
        assert!(
            table.find(RtClock::Intended.description())
                < table.find(RtClock::Polygraph.description())
        );
        assert!(
            table.contains("<tr><td>all</td><td>4.00</td><td>2.00</td><td>10.0</td><td>2.00</td><td>1.00</td><td>5.00</td><td>40</td></tr>"),
            "{table}"
        );
        assert_eq!(o.matches("class=\"pass\"").count(), 2, "{o}");

        let bad = sample::entry("total", 5, 30, 2);
        let mut o = String::new();
        // A workload that offered enough hits for the hit-ratio rule.
        let offered = Facts {
            dhr_offered: 60.0,
            ..fwd(&bad)
        };
        figures(&mut o, &bad, None, &offered);
        assert!(o.contains("Headline figures (whole run)"));
        assert_eq!(o.matches("class=\"fail\"").count(), 2, "{o}");
        let mut o = String::new();
        figures(
            &mut o,
            &bad,
            None,
            &Facts::of_figures(&bad, Mode::Direct, false),
        );
        assert!(o.contains("no proxy under test") && o.contains("class=\"na\""));
    }
}
