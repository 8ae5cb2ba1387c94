//! The report's tables: response time on its two clocks (from the intended
//! start, from the connection as Web Polygraph), phases, content types,
//! request types and errors.

use super::{esc, ms, pct};
use cacheoff_stats::{Entry, ErrorKind, Latency, RtClock};
use cacheoff_workload::RequestType;
use std::fmt::Write;

/// Mean, p50 and p99 cells, or dashes when there were no replies.
pub(super) fn latency_cells(l: &Latency) -> String {
    if l.count == 0 {
        return "<td>-</td><td>-</td><td>-</td>".into();
    }
    format!(
        "<td>{}</td><td>{}</td><td>{}</td>",
        ms(l.mean),
        ms(l.p50),
        ms(l.p99)
    )
}

/// Opens a table with these column headings.
pub(super) fn table(o: &mut String, heads: &[&str]) {
    o.push_str("<table><thead><tr>");
    for h in heads {
        let _ = write!(o, "<th>{h}</th>");
    }
    o.push_str("</tr></thead><tbody>");
}

/// `n` as a share of `of`, shown in percent.
fn share(n: u64, of: u64) -> String {
    pct(n as f64 * 100.0 / of.max(1) as f64)
}

/// The latency section: the two clocks, and what coordinated omission
/// hides.
pub(super) fn latency(o: &mut String, head: &Entry) {
    o.push_str(
        "<h2 id=\"latency\">Response time from the intended start vs from the connection</h2>",
    );
    table(o, &["", "mean", "p50", "p99"]);
    type Pick = fn(&cacheoff_stats::LatencySet) -> &Latency;
    let kinds: [(&str, Pick); 3] = [
        ("all", |s| &s.all),
        ("hits", |s| &s.hit),
        ("misses", |s| &s.miss),
    ];
    for (k, pick) in kinds {
        for c in RtClock::ALL {
            let _ = write!(
                o,
                "<tr><td>{k}, {}</td>{}</tr>",
                esc(c.description()),
                latency_cells(pick(head.rt(*c)))
            );
        }
    }
    o.push_str("</tbody></table>");
    let gap = head.rt_ms.all.mean - head.rt_polygraph_ms.all.mean;
    let _ = write!(
        o,
        "<p class=\"note\">Robots plan each request's start time in advance (open loop). Timing from that intended start counts the time a request waited for one of its robot's connections; Web Polygraph starts its clock when the transaction gets its connection (an idle one, or the start of the connect for a new one), so that wait is not in its figure (coordinated omission). Results published with Polygraph compare with the second clock. Here the difference of means is {} ms, and {} of requests left more than 10 ms late: {}.</p>",
        ms(gap),
        pct(head.sent_late_percent),
        if head.sent_late_percent < 1.0 {
            "the robots kept their schedule"
        } else {
            "requests queued behind busy connections, and the intended-start figures include that wait"
        }
    );
}

/// A phase table's heading for a response time on `clock`.
fn rt_head(what: &str, clock: RtClock) -> String {
    format!("{what} ms, {}", clock.short_label())
}

/// One row per phase, then the total; the `measured` phase stands out.
pub(super) fn phases(o: &mut String, phases: &[Entry], total: &Entry, measured: Option<&str>) {
    let heads = [
        rt_head("all", RtClock::Intended),
        rt_head("all", RtClock::Polygraph),
        rt_head("hit", RtClock::Intended),
        rt_head("miss", RtClock::Intended),
    ];
    table(
        o,
        &[
            "phase",
            "duration s",
            "xacts",
            "replies/s",
            &heads[0],
            &heads[1],
            &heads[2],
            &heads[3],
            "DHR meas / off",
            "BHR meas / off",
            "errors",
        ],
    );
    for e in phases.iter().chain(std::iter::once(total)) {
        let class = if measured == Some(e.name.as_str()) {
            r#" class="measured""#
        } else {
            ""
        };
        let _ = write!(
            o,
            "<tr{class}><td>{}</td><td>{:.1}</td><td>{}</td><td>{:.1}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1} / {:.1}</td><td>{:.1} / {:.1}</td><td>{} ({})</td></tr>",
            esc(&e.name),
            e.duration_s,
            e.xacts,
            e.rate_xps,
            ms(e.rt_ms.all.mean),
            ms(e.rt_polygraph_ms.all.mean),
            ms(e.rt_ms.hit.mean),
            ms(e.rt_ms.miss.mean),
            e.dhr.measured,
            e.dhr.offered,
            e.bhr.measured,
            e.bhr.offered,
            e.errors.total,
            pct(e.errors.percent)
        );
    }
    o.push_str("</tbody></table>");
    let _ = write!(
        o,
        "<p class=\"note\">Response times: {}, {}; {}, {}. Offered hit ratios count every revisit of a cachable object, as Web Polygraph does; an ideal cache hits a little less (a revisit of an object first answered 304 or asked for by HEAD finds nothing to hit).</p>",
        RtClock::Intended.short_label(),
        esc(RtClock::Intended.description()),
        RtClock::Polygraph.short_label(),
        esc(RtClock::Polygraph.description())
    );
}

pub(super) fn content(o: &mut String, e: &Entry) {
    table(
        o,
        &[
            "content type",
            "xacts",
            "share",
            "mean size",
            "hits",
            "hit share",
            "bytes",
        ],
    );
    for (name, t) in &e.content_types {
        let mean = if t.bodies == 0 {
            "-".to_string()
        } else {
            format!("{:.1} KB", t.bytes as f64 / t.bodies as f64 / 1024.0)
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(name),
            t.xacts,
            share(t.xacts, e.xacts),
            mean,
            t.hits,
            share(t.hits, t.xacts),
            crate::charts::short_number(t.bytes as f64)
        );
    }
    o.push_str("</tbody></table>");
}

pub(super) fn requests(o: &mut String, e: &Entry) {
    table(o, &["request type", "xacts", "share"]);
    for t in RequestType::ALL {
        let n = e.request_types.get(t.name()).copied().unwrap_or(0);
        let _ = write!(
            o,
            "<tr><td title=\"{}\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(t.description()),
            esc(t.name()),
            n,
            share(n, e.xacts)
        );
    }
    o.push_str("</tbody></table>");
}

/// Errors by kind, each as a share of the requests the error percentage
/// counts, with what the kind means.
pub(super) fn errors(o: &mut String, e: &Entry) {
    if e.errors.by_kind.is_empty() {
        o.push_str("<p>No errors.</p>");
        return;
    }
    table(o, &["error", "count", "share of requests", "meaning"]);
    for k in ErrorKind::ALL {
        if let Some(n) = e.errors.by_kind.get(k.name()) {
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td style=\"text-align:left;white-space:normal\">{}</td></tr>",
                esc(k.name()),
                n,
                pct(e.share_of_requests(*n)),
                esc(k.description())
            );
        }
    }
    o.push_str("</tbody></table>");
}

#[cfg(test)]
mod tests {
    use super::super::sample;
    use super::*;

    /// The cells of the table row that starts with `first`.
    fn row(html: &str, first: &str) -> Vec<String> {
        let at = html
            .find(&format!(">{first}</td>"))
            .unwrap_or_else(|| panic!("no row {first} in {html}"));
        let end = at + html[at..].find("</tr>").unwrap();
        let start = html[..at].rfind("<tr").unwrap();
        html[start..end]
            .split("<td")
            .skip(1)
            .map(|c| {
                let c = &c[c.find('>').unwrap() + 1..];
                c[..c.find("</td>").unwrap()].to_string()
            })
            .collect()
    }

    #[test]
    fn phase_table_has_a_row_per_phase_and_marks_the_measured_one() {
        let warm = sample::entry("warm", 0, 20, 0);
        let meas = sample::entry("meas", 30, 10, 1);
        let total = sample::entry("total", 30, 30, 1);
        let mut o = String::new();
        phases(&mut o, &[warm, meas], &total, Some("meas"));
        assert_eq!(o.matches("<tr").count(), 4, "heading, 2 phases, total");
        assert_eq!(
            row(&o, "meas"),
            [
                "meas",
                "10.0",
                "40",
                "4.0",
                "4.00",
                "2.00",
                "2.00",
                "10.0",
                "75.0 / 75.0",
                "75.0 / 75.0",
                "1 (2.4%)"
            ]
        );
        assert!(o.contains("<tr class=\"measured\"><td>meas<"));
        assert_eq!(o.matches("measured\"").count(), 1);
        assert_eq!(row(&o, "warm")[8], "0.0 / 0.0");
        // The all-replies columns name their clocks, side by side.
        assert!(o.contains("<th>all ms, intended start</th><th>all ms, Polygraph clock</th>"));
        for c in RtClock::ALL {
            assert!(o.contains(c.description()), "{o}");
        }
    }

    #[test]
    fn latency_table_sets_the_intended_start_beside_the_connection() {
        let mut o = String::new();
        latency(&mut o, &sample::entry("meas", 30, 10, 0));
        assert_eq!(
            row(
                &o,
                "hits, from the intended start (corrected for coordinated omission)"
            )[1..],
            ["2.00", "2.00", "2.00"]
        );
        assert_eq!(
            row(&o, "misses, from the connection, as Web Polygraph")[1..],
            ["5.00", "5.00", "5.00"]
        );
        // Means 4 ms and 2 ms; every request left on time.
        assert!(
            o.contains("difference of means is 2.00 ms, and 0.0% of requests"),
            "{o}"
        );
        assert!(o.contains("kept their schedule"));
        let mut o = String::new();
        latency(&mut o, &sample::entry("meas", 0, 10, 0));
        assert_eq!(
            row(&o, "hits, from the connection, as Web Polygraph")[1..],
            ["-", "-", "-"]
        );
    }

    #[test]
    fn content_and_request_tables_give_shares() {
        let e = sample::entry("meas", 30, 10, 0);
        let mut o = String::new();
        content(&mut o, &e);
        assert_eq!(
            row(&o, "image"),
            ["image", "40", "100.0%", "1.0 KB", "30", "75.0%", "40.96k"]
        );
        let mut o = String::new();
        requests(&mut o, &e);
        assert_eq!(row(&o, "basic")[1..], ["40", "100.0%"]);
        assert_eq!(row(&o, "post")[1..], ["0", "0.0%"]);
        assert_eq!(o.matches("<tr>").count(), 1 + RequestType::COUNT);
    }

    #[test]
    fn error_table_lists_the_kinds_that_occurred_with_their_meaning() {
        let mut o = String::new();
        errors(&mut o, &sample::entry("total", 30, 10, 0));
        assert_eq!(o, "<p>No errors.</p>");
        let mut o = String::new();
        let e = sample::entry("total", 30, 9, 1);
        errors(&mut o, &e);
        let r = row(&o, "body_mismatch");
        assert_eq!(r[1..3], ["1", "2.5%"]);
        assert_eq!(r[3], esc(ErrorKind::BodyMismatch.description()));
        assert_eq!(o.matches("<tr>").count(), 2, "heading and one kind");
    }
}
