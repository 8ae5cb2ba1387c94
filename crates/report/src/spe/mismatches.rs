//! Mismatches: every kind of the closed set per proxy, with what it means,
//! and the examples the Multiplier kept (URL and what was expected vs got).

use super::{esc, table};
use cacheoff_rundir::spe::{Mismatch, ProxySummary, Summary, MAX_EXAMPLES};
use std::fmt::Write;

/// Kinds a proxy's counts or examples name that the closed set does not
/// (written by a newer Multiplier), in name order.
fn unknown_kinds(proxies: &[ProxySummary]) -> Vec<String> {
    let mut out: Vec<String> = proxies
        .iter()
        .flat_map(|p| {
            p.span
                .mismatches_by_kind
                .keys()
                .chain(p.span.examples.iter().map(|e| &e.kind))
        })
        .filter(|k| Mismatch::from_name(k).is_none())
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

fn description(kind: &str) -> &'static str {
    Mismatch::from_name(kind).map_or("a kind this cacheoff does not know", Mismatch::description)
}

pub(super) fn section(o: &mut String, s: &Summary) {
    o.push_str("<h2 id=\"mismatches\">Mismatches by kind</h2>");
    if s.proxies.is_empty() {
        o.push_str("<p>No proxies were under test.</p>");
        return;
    }
    let mut heads = vec!["kind".to_string()];
    heads.extend(s.proxies.iter().map(|p| esc(&p.span.name)));
    heads.push("meaning".into());
    let heads: Vec<&str> = heads.iter().map(String::as_str).collect();
    table(o, "mismatches-table", &heads, &[heads.len() - 1]);
    let kinds: Vec<String> = Mismatch::ALL
        .iter()
        .map(|k| k.name().to_string())
        .chain(unknown_kinds(&s.proxies))
        .collect();
    for k in &kinds {
        let _ = write!(
            o,
            "<tr data-kind=\"{k}\"><td title=\"{d}\">{k}</td>",
            k = esc(k),
            d = esc(description(k))
        );
        for p in &s.proxies {
            let n = p.span.mismatches_by_kind.get(k).copied().unwrap_or(0);
            let _ = write!(o, "<td>{n}</td>");
        }
        let _ = write!(o, "<td class=\"wrap\">{}</td></tr>", esc(description(k)));
    }
    o.push_str("<tr data-kind=\"\"><td>copies with a mismatch</td>");
    for p in &s.proxies {
        let _ = write!(o, "<td>{}</td>", p.span.counts.mismatches);
    }
    o.push_str("<td class=\"wrap\">each copy counted once, by the first kind that applies</td></tr></tbody></table>");
    o.push_str("<p class=\"note\">A mismatch is a proxy's reply to a copy that differs from the Collector's reply to the same request, checked in the order of this table; <code>error</code> counts copies without a usable reply.</p>");
    examples(o, s, &kinds);
}

/// Each proxy's examples, by kind in the table's order, at most
/// [`MAX_EXAMPLES`] per kind (a folded run gathers every interval's).
fn examples(o: &mut String, s: &Summary, kinds: &[String]) {
    for p in &s.proxies {
        let _ = write!(
            o,
            "<h3 id=\"examples-{}\">Examples: {}</h3>",
            esc(&p.span.name),
            esc(&p.span.name)
        );
        if p.span.examples.is_empty() {
            o.push_str(if p.span.counts.mismatches == 0 {
                "<p>No mismatches: every compared reply matched the Collector's.</p>"
            } else {
                "<p>No examples were kept.</p>"
            });
            continue;
        }
        table(
            o,
            &format!("examples-table-{}", esc(&p.span.name)),
            &["kind", "URL", "expected vs got"],
            &[1, 2],
        );
        for k in kinds {
            let of_kind: Vec<_> = p.span.examples.iter().filter(|e| &e.kind == k).collect();
            for e in of_kind.iter().take(MAX_EXAMPLES) {
                let _ = write!(
                    o,
                    "<tr data-kind=\"{k}\"><td title=\"{d}\">{k}</td><td class=\"wrap\"><code class=\"url\">{}</code></td><td class=\"wrap\">{}</td></tr>",
                    esc(&e.url),
                    esc(&e.detail),
                    k = esc(k),
                    d = esc(description(k)),
                );
            }
            if of_kind.len() > MAX_EXAMPLES {
                let _ = write!(
                    o,
                    "<tr data-kind=\"{k}\"><td>{k}</td><td class=\"wrap\" colspan=\"2\">and {} more</td></tr>",
                    of_kind.len() - MAX_EXAMPLES,
                    k = esc(k)
                );
            }
        }
        o.push_str("</tbody></table>");
    }
}

#[cfg(test)]
mod tests {
    use super::super::sample::{self, row};
    use super::*;
    use cacheoff_rundir::spe::Example;

    #[test]
    fn every_kind_has_a_row_with_its_meaning_and_counts_per_proxy() {
        let run = sample::run();
        let mut o = String::new();
        section(&mut o, &run.summary);
        let table = &o[..o.find("<h3").unwrap()];
        assert_eq!(table.matches("<tr data-kind=").count(), Mismatch::COUNT + 1);
        for k in Mismatch::ALL {
            let r = row(table, k.name());
            assert_eq!(r[3], esc(k.description()));
            assert!(table.contains(&format!("title=\"{}\"", esc(k.description()))));
        }
        assert_eq!(row(table, "stale")[1..3], ["0", "3"]);
        assert_eq!(row(table, "truncated")[1..3], ["0", "1"]);
        assert_eq!(row(table, "wrong_status")[1..3], ["0", "0"]);
        assert_eq!(row(table, "copies with a mismatch")[1..3], ["0", "4"]);

        // The examples, by kind, escaped.
        let honest = &o
            [o.find("id=\"examples-honest\"").unwrap()..o.find("id=\"examples-sloppy\"").unwrap()];
        assert!(honest.contains("No mismatches"));
        let sloppy = &o[o.find("id=\"examples-sloppy\"").unwrap()..];
        assert_eq!(sloppy.matches("<tr data-kind=\"stale\"").count(), 2);
        assert_eq!(sloppy.matches("<tr data-kind=\"truncated\"").count(), 1);
        assert!(sloppy.contains("<code class=\"url\">http://origin.test/stale/obj1</code>"));
        assert!(sloppy.contains("expected &lt;truncated&gt;; got 2"));
        // In the table's order of kinds: truncated before stale.
        assert!(sloppy.find("truncated/obj2") < sloppy.find("stale/obj1"));
    }

    #[test]
    fn unknown_kinds_and_many_examples_are_shown_too() {
        let mut run = sample::run();
        let p = &mut run.summary.proxies[1].span;
        p.mismatches_by_kind.insert("teleported".into(), 2);
        for i in 0..MAX_EXAMPLES + 2 {
            p.examples.push(Example {
                kind: "wrong_status".into(),
                url: format!("http://o/{i}"),
                detail: "expected 200; got 404".into(),
            });
        }
        let mut o = String::new();
        section(&mut o, &run.summary);
        assert_eq!(
            row(&o, "teleported")[1..],
            ["0", "2", "a kind this cacheoff does not know"]
        );
        let sloppy = &o[o.find("id=\"examples-sloppy\"").unwrap()..];
        assert_eq!(
            sloppy.matches("<tr data-kind=\"wrong_status\"").count(),
            MAX_EXAMPLES + 1
        );
        assert!(sloppy.contains("and 2 more"));
    }
}
