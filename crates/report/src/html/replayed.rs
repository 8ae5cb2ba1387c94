//! A replay's trace and how far the proxy got from the trace's limit: the
//! measured hit ratio beside what an infinite, an LRU and Belady's cache
//! of the same size would have reached on the same requests.

use super::tables::table;
use super::{esc, pct};
use cacheoff_rundir::Replayed;
use cacheoff_stats::Entry;
use std::fmt::Write;

pub(super) fn section(o: &mut String, r: &Replayed, total: &Entry) {
    o.push_str("<h2 id=\"trace\">The trace and its ceilings</h2>");
    let _ = write!(
        o,
        "<p>{} ({} format): {} requests for {} objects over {:.1} s, replayed at {}× speed; cachable by the {} rule: {} requests. Ceilings for a {:.0} MB cache.</p>",
        esc(&r.file),
        esc(&r.trace_format),
        r.requests,
        r.objects,
        r.trace_duration_s,
        trim(r.speed),
        esc(&r.cachable_rule),
        r.cachable_requests,
        r.cache_bytes as f64 / f64::from(1u32 << 20),
    );
    table(o, &["document hit ratio", "%", "of the infinite cache's"]);
    let rows = [
        ("measured (the proxy under test)", total.dhr.measured),
        ("offered (revisits of cachable objects)", total.dhr.offered),
        ("infinite cache", r.ceiling.infinite),
        (
            "Belady, size-blind (farthest next use: not a bound)",
            r.ceiling.belady,
        ),
        ("LRU", r.ceiling.lru),
    ];
    for (name, v) in rows {
        let share = if r.ceiling.infinite > 0.0 {
            pct(100.0 * v / r.ceiling.infinite)
        } else {
            "-".into()
        };
        let _ = write!(
            o,
            "<tr><td>{name}</td><td>{}</td><td>{share}</td></tr>",
            pct(v)
        );
    }
    o.push_str("</tbody></table><p class=\"note\">Ceilings count every request (uncachable ones never hit) and were computed in one pass over the trace before the run (docs/traces.md).</p>");
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_rundir::Ceiling;

    #[test]
    fn the_ceilings_stand_beside_the_measured_ratio() {
        let r = Replayed {
            format: cacheoff_rundir::TRACE_FORMAT.into(),
            version: 1,
            file: "t.log".into(),
            trace_format: "squid".into(),
            requests: 100,
            objects: 40,
            cachable_requests: 90,
            bytes: 1 << 20,
            trace_duration_s: 60.0,
            speed: 2.5,
            cache_bytes: 64 << 20,
            cachable_rule: "trace".into(),
            ceiling: Ceiling {
                infinite: 60.0,
                lru: 45.0,
                belady: 52.5,
            },
        };
        let total = crate::html::sample::entry("total", 30, 70, 0);
        let mut o = String::new();
        section(&mut o, &r, &total);
        assert!(o.contains("replayed at 2.5× speed"), "{o}");
        assert!(o.contains("<td>infinite cache</td><td>60.0"), "{o}");
        assert!(o.contains("<td>LRU</td><td>45.0"), "{o}");
        // 30 hits of 100: half of what an infinite cache gets.
        assert!(
            o.contains("<td>measured (the proxy under test)</td><td>30.0"),
            "{o}"
        );
        assert!(o.contains("<td>50.0"), "{o}");
    }
}
