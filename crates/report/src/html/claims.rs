//! What the proxy claims: per header, how many successful replies said
//! hit or miss, and how many of those the transaction echo contradicts
//! (docs/run-directory.md, "What proxies claim").

use super::esc;
use super::tables::table;
use cacheoff_stats::{Counts, Entry};
use std::fmt::Write;

/// One row: a header's claims against the echo.
struct Row {
    what: &'static str,
    hit_was_miss: u64,
    miss_was_hit: u64,
    none: u64,
}

fn rows(c: &Counts) -> [Row; 5] {
    [
        Row {
            what: "the proxy's claim (Cache-Status, else X-Cache, Via, Age)",
            hit_was_miss: c.claim_hit_was_miss,
            miss_was_hit: c.claim_miss_was_hit,
            none: c.claim_none,
        },
        Row {
            what: "Cache-Status",
            hit_was_miss: c.cache_status_hit_was_miss,
            miss_was_hit: c.cache_status_miss_was_hit,
            none: c.cache_status_none,
        },
        Row {
            what: "X-Cache",
            hit_was_miss: c.x_cache_hit_was_miss,
            miss_was_hit: c.x_cache_miss_was_hit,
            none: c.x_cache_none,
        },
        Row {
            what: "Via",
            hit_was_miss: c.via_hit_was_miss,
            miss_was_hit: c.via_miss_was_hit,
            none: c.via_none,
        },
        Row {
            what: "Age",
            hit_was_miss: c.age_hit_was_miss,
            miss_was_hit: 0,
            none: c.age_none,
        },
    ]
}

/// The section over `e` (the whole run: every successful reply).
pub(super) fn section(o: &mut String, e: &Entry) {
    o.push_str("<h2 id=\"claims\">What the proxy claims</h2>");
    let c = e.raw_counts();
    let rows = rows(&c);
    // Every reply adds to each row, so all zero with replies means a run
    // from before robots read claims.
    let counted = rows
        .iter()
        .any(|r| r.hit_was_miss + r.miss_was_hit + r.none > 0);
    if e.xacts == 0 || !counted {
        o.push_str("<p>No claims were read in this run.</p>");
        return;
    }
    if c.claim_none == e.xacts {
        o.push_str("<p>No reply claimed a hit or a miss.</p>");
        return;
    }
    let wrong = c.claim_hit_was_miss + c.claim_miss_was_hit;
    let _ = write!(
        o,
        "<p>Replies the proxy called hits or misses, held against the transaction echo: {}.</p>",
        if wrong == 0 {
            "every claim was true".to_string()
        } else {
            format!("{wrong} of its claims were false")
        }
    );
    table(
        o,
        &[
            "header",
            "claimed",
            "hit claimed, was a miss",
            "miss claimed, was a hit",
            "no claim",
        ],
    );
    for r in &rows {
        let claimed = e.xacts.saturating_sub(r.none);
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(r.what),
            claimed,
            r.hit_was_miss,
            r.miss_was_hit,
            r.none
        );
    }
    o.push_str("</tbody></table>");
}

#[cfg(test)]
mod tests {
    use super::super::sample;
    use super::*;

    #[test]
    fn false_claims_are_counted_per_header() {
        let mut e = sample::entry("total", 30, 10, 0);
        let mut c = e.raw_counts();
        c.claim_hit_was_miss = 10;
        c.cache_status_hit_was_miss = 10;
        c.x_cache_none = 40;
        c.via_none = 40;
        c.age_none = 10;
        e.counts = Some(c);
        let mut o = String::new();
        section(&mut o, &e);
        assert!(o.contains("10 of its claims were false"), "{o}");
        assert!(
            o.contains("<tr><td>Cache-Status</td><td>40</td><td>10</td><td>0</td><td>0</td></tr>")
        );
        assert!(o.contains("<tr><td>X-Cache</td><td>0</td><td>0</td><td>0</td><td>40</td></tr>"));
        assert!(o.contains("<tr><td>Age</td><td>30</td><td>0</td><td>0</td><td>10</td></tr>"));
    }

    #[test]
    fn runs_without_claims_say_so() {
        let mut o = String::new();
        section(&mut o, &sample::entry("total", 30, 10, 0));
        assert!(
            o.ends_with("<p>No claims were read in this run.</p>"),
            "{o}"
        );
        let mut e = sample::entry("total", 30, 10, 0);
        let mut c = e.raw_counts();
        c.claim_none = 40;
        e.counts = Some(c);
        let mut o = String::new();
        section(&mut o, &e);
        assert!(
            o.ends_with("<p>No reply claimed a hit or a miss.</p>"),
            "{o}"
        );
    }
}
