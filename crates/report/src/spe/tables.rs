//! The SPE page's tables: the ranking (which proxy would have served these
//! users best), each proxy's copies and hit ratios, and its times beside
//! the Collector's.

use super::{esc, ms_or_dash, overloaded_badge, pct_of, signed_ms, table};
use cacheoff_rundir::spe::{self, CollectorSpan, DiffMs, ProxySummary, Rank, Summary};
use cacheoff_stats::{Latency, LatencySet};
use std::fmt::Write;

/// The summary's ranking, or one made from its proxies when it has none
/// (a hand-made or older summary).
fn ranks(s: &Summary) -> Vec<Rank> {
    if s.ranking.is_empty() {
        spe::ranking(&s.proxies)
    } else {
        s.ranking.clone()
    }
}

/// The dropped copies, their share of the copies, and the badge.
fn dropped_cell(p: &ProxySummary) -> String {
    let c = &p.span.counts;
    if c.dropped == 0 {
        return "0".into();
    }
    format!(
        "{} ({}){}",
        c.dropped,
        pct_of(100.0 * c.dropped as f64 / c.copied.max(1) as f64, c.copied),
        overloaded_badge()
    )
}

/// The mean of paired differences from the Collector, with its count as a
/// tooltip.
fn diff_cell(d: &DiffMs) -> String {
    if d.count == 0 {
        return "<td>-</td>".into();
    }
    format!(
        "<td title=\"{} paired replies\">{}</td>",
        d.count,
        signed_ms(d.mean)
    )
}

pub(super) fn ranking(o: &mut String, s: &Summary) {
    o.push_str("<h2 id=\"ranking\">Which proxy would have served these users best</h2>");
    let rows = ranks(s);
    if rows.is_empty() {
        o.push_str("<p>No proxies were under test.</p>");
        return;
    }
    table(
        o,
        "ranking-table",
        &[
            "rank",
            "proxy",
            "mean response time ms",
            "vs Collector ms",
            "validated hit ratio",
            "mismatches",
            "dropped",
            "why unranked",
        ],
        &[1, 7],
    );
    for r in &rows {
        let p = s.proxy(&r.name);
        let completed = p.map_or(0, |p| p.span.counts.completed);
        let _ = write!(
            o,
            "<tr data-proxy=\"{}\" data-rank=\"{}\"><td>{}</td><td class=\"l\">{}</td><td>{}</td>{}<td>{}</td><td>{}</td><td>{}</td><td class=\"wrap\">{}</td></tr>",
            esc(&r.name),
            r.rank.map_or(String::new(), |n| n.to_string()),
            r.rank.map_or("-".into(), |n| n.to_string()),
            esc(&r.name),
            if completed == 0 { "-".into() } else { ms_or_dash(r.mean_rt_ms) },
            p.map_or("<td>-</td>".into(), |p| diff_cell(&p.span.rt_diff_ms.all)),
            p.map_or("-".into(), |p| pct_of(p.validated_hit_ratio, completed)),
            p.map_or("-".into(), |p| p.span.counts.mismatches.to_string()),
            p.map_or("-".into(), dropped_cell),
            esc(r.reason.as_deref().unwrap_or("")),
        );
    }
    o.push_str("</tbody></table>");
    o.push_str("<p class=\"note\">Ranked: proxies that returned what the Collector returned (no mismatches), kept up with every copy (none dropped) and completed some, fastest mean response time first. The others follow with the reason. A proxy that drops copies could not keep up with the clients' load: it is reported as overloaded, not compared on less traffic. \"vs Collector\" is the mean difference from the Collector's response time to the same requests; the validated hit ratio counts the replies the Collector's stamp shows the proxy served itself.</p>");
}

/// Copies, their fate and the hit ratios, per proxy; the Collector's own
/// replies below for reference.
pub(super) fn copies(o: &mut String, s: &Summary) {
    o.push_str("<h2 id=\"copies\">Copies and hit ratios per proxy</h2>");
    table(
        o,
        "copies-table",
        &[
            "",
            "copied",
            "dropped",
            "not copied (unsafe)",
            "completed",
            "errors",
            "uncompared",
            "unverified",
            "hit ratio claimed",
            "hit ratio validated",
        ],
        &[],
    );
    for p in &s.proxies {
        let c = &p.span.counts;
        let _ = write!(
            o,
            "<tr data-proxy=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.span.name),
            esc(&p.span.name),
            c.copied,
            dropped_cell(p),
            c.not_copied_unsafe,
            c.completed,
            c.errors,
            c.uncompared,
            c.unverified,
            pct_of(p.claimed_hit_ratio, c.completed),
            pct_of(p.validated_hit_ratio, c.completed),
        );
    }
    let c: &CollectorSpan = &s.collector;
    let _ = write!(
        o,
        "<tr class=\"reference\" data-proxy=\"\"><td>Collector (reference)</td><td>-</td><td>-</td><td>-</td><td>{}</td><td>{}</td><td>-</td><td>-</td><td>{}</td><td>-</td></tr>",
        c.completed,
        c.errors,
        pct_of(100.0 * c.hits as f64 / c.completed.max(1) as f64, c.completed),
    );
    o.push_str("</tbody></table>");
    o.push_str("<p class=\"note\">Copied: copies queued for the proxy; dropped: copies its full queue turned away; not copied: unsafe requests (POST, PUT, ...) sent to the Collector only. Completed copies had a usable reply and were compared; errors had none; uncompared ones could not be, as the Collector's own reply failed or came too late. The claimed hit ratio is what the proxy says (<code>X-Cache</code>, <code>Cache-Status</code>); the validated one what the Collector's stamp shows: a reply without the stamp was served by the proxy, one with it was fetched through the Collector; unverified replies carried no verdict either way. The Collector's hit ratio is its own <code>X-Cache</code>.</p>");
}

/// Mean, p50 and p99 cells, or dashes when there were no replies.
fn lat_cells(l: &Latency) -> String {
    if l.count == 0 {
        return "<td>-</td><td>-</td><td>-</td>".into();
    }
    format!(
        "<td>{}</td><td>{}</td><td>{}</td>",
        ms_or_dash(l.mean),
        ms_or_dash(l.p50),
        ms_or_dash(l.p99)
    )
}

/// Opens a table whose groups of three columns (mean, p50, p99) are
/// headed by `groups`, after a first column and before `tail` columns.
fn grouped_table(o: &mut String, id: &str, groups: &[&str], tail: &[&str]) {
    let _ = write!(o, "<table id=\"{id}\"><thead><tr><th rowspan=\"2\"></th>");
    for g in groups {
        let _ = write!(o, "<th colspan=\"3\" style=\"text-align:center\">{g}</th>");
    }
    for t in tail {
        let _ = write!(o, "<th rowspan=\"2\">{t}</th>");
    }
    o.push_str("</tr><tr>");
    for _ in groups {
        o.push_str("<th>mean</th><th>p50</th><th>p99</th>");
    }
    o.push_str("</tr></thead><tbody>");
}

/// Response times of hits, misses and all replies per proxy and the
/// Collector's; then each proxy's difference from the Collector and the
/// parts of its time.
pub(super) fn response_times(o: &mut String, s: &Summary) {
    o.push_str("<h2 id=\"response-times\">Response times per proxy, ms</h2>");
    grouped_table(o, "rt-table", &["hits", "misses", "all"], &["replies"]);
    let row = |o: &mut String, class: &str, name: &str, key: &str, rt: &LatencySet| {
        let _ = write!(
            o,
            "<tr{class} data-proxy=\"{}\"><td>{}</td>{}{}{}<td>{}</td></tr>",
            esc(key),
            esc(name),
            lat_cells(&rt.hit),
            lat_cells(&rt.miss),
            lat_cells(&rt.all),
            rt.all.count
        );
    };
    for p in &s.proxies {
        row(o, "", &p.span.name, &p.span.name, &p.span.rt_ms);
    }
    row(
        o,
        " class=\"reference\"",
        "Collector (reference)",
        "",
        &s.collector.rt_ms,
    );
    o.push_str("</tbody></table>");
    o.push_str("<p class=\"note\">A copy's time runs from its send to the reply's last byte; hits and misses by the Collector's stamp (by the proxy's claim when unverified). The Collector's time runs from the client's request to the reply's last byte written back, hits and misses by its own <code>X-Cache</code>. Percentiles of a folded run are the largest interval's (upper bounds).</p>");

    o.push_str("<h2 id=\"timing\">Where each proxy's time went, ms</h2>");
    o.push_str("<table id=\"timing-table\"><thead><tr><th rowspan=\"2\"></th><th colspan=\"3\" style=\"text-align:center\">vs Collector, mean of paired differences</th><th colspan=\"3\" style=\"text-align:center\">connect</th><th colspan=\"3\" style=\"text-align:center\">first byte</th><th colspan=\"3\" style=\"text-align:center\">wait in queue</th></tr><tr><th>hits</th><th>misses</th><th>all</th>");
    for _ in 0..3 {
        o.push_str("<th>mean</th><th>p50</th><th>p99</th>");
    }
    o.push_str("</tr></thead><tbody>");
    for p in &s.proxies {
        let d = &p.span.rt_diff_ms;
        let _ = write!(
            o,
            "<tr data-proxy=\"{}\"><td>{}</td>{}{}{}{}{}{}</tr>",
            esc(&p.span.name),
            esc(&p.span.name),
            diff_cell(&d.hit),
            diff_cell(&d.miss),
            diff_cell(&d.all),
            lat_cells(&p.span.connect_ms),
            lat_cells(&p.span.first_byte_ms),
            lat_cells(&p.span.queue_ms),
        );
    }
    o.push_str("</tbody></table>");
    o.push_str("<p class=\"note\">Paired differences: the proxy's response time minus the Collector's for the same request (negative: the proxy was faster than the Collector). Connect is 0 on a reused connection; first byte runs from the copy's send; the wait in queue from the client's request to the copy's send.</p>");
}

#[cfg(test)]
mod tests {
    use super::super::sample::{self, row, section};
    use super::*;

    #[test]
    fn the_ranking_shows_why_a_proxy_is_not_ranked() {
        let run = sample::run();
        let mut o = String::new();
        ranking(&mut o, &run.summary);
        assert_eq!(
            row(&o, "1"),
            ["1", "honest", "6.00", "+2.00", "50.0%", "0", "0", ""]
        );
        let sloppy = row(&o, "-");
        assert_eq!(sloppy[..6], ["-", "sloppy", "2.00", "-2.00", "50.0%", "4"]);
        assert!(sloppy[6].starts_with("2 (5.0%)<span class=\"badge overloaded\""));
        assert_eq!(sloppy[7], "4 mismatches, 2 copies dropped");

        // A summary without a ranking gets one from its proxies.
        let mut s = run.summary.clone();
        s.ranking.clear();
        let mut again = String::new();
        ranking(&mut again, &s);
        assert_eq!(again, o);
    }

    #[test]
    fn copies_and_times_have_a_row_per_proxy_and_the_collector_s() {
        let run = sample::run();
        let mut o = String::new();
        copies(&mut o, &run.summary);
        assert_eq!(
            row(&o, "honest"),
            ["honest", "40", "0", "4", "40", "0", "0", "0", "60.0%", "50.0%"]
        );
        assert_eq!(row(&o, "sloppy")[4], "38");
        assert_eq!(
            row(&o, "Collector (reference)"),
            [
                "Collector (reference)",
                "-",
                "-",
                "-",
                "40",
                "0",
                "-",
                "-",
                "30.0%",
                "-"
            ]
        );
        let mut o = String::new();
        response_times(&mut o, &run.summary);
        let rt = section(&o, "<h2 id=\"response-times\"");
        assert_eq!(
            row(rt, "honest")[1..],
            ["3.00", "3.00", "6.00", "9.00", "9.00", "18.0", "6.00", "6.00", "12.0", "40"]
        );
        assert_eq!(
            row(rt, "Collector (reference)")[7..],
            ["4.00", "4.00", "8.00", "40"]
        );
        let timing = section(&o, "<h2 id=\"timing\"");
        assert_eq!(row(timing, "sloppy")[1..4], ["-", "-", "-2.00"]);
        assert!(timing.contains("<td title=\"38 paired replies\">-2.00</td>"));
    }

    #[test]
    fn a_proxy_without_completed_copies_shows_dashes() {
        let mut run = sample::run();
        let p = &mut run.summary.proxies[1];
        p.span.counts.completed = 0;
        p.span.rt_ms = LatencySet::default();
        let mut o = String::new();
        copies(&mut o, &run.summary);
        assert_eq!(row(&o, "sloppy")[8..], ["-", "-"]);
        let mut o = String::new();
        response_times(&mut o, &run.summary);
        assert_eq!(row(&o, "sloppy")[1..4], ["-", "-", "-"]);
    }
}
