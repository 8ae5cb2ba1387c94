//! Counting requests and hits in a product's access log, as its product
//! file's `[log]` table says.

use crate::spec::{LogSpec, PROBE_MARK};

/// What an access log shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogCounts {
    /// Lines, without blank ones and readiness probes.
    pub requests: u64,
    /// Those whose result is one of the product's hits.
    pub hits: u64,
}

/// Whether `value` is one of `hits` (a trailing `*` matches any rest).
pub fn is_hit(value: &str, hits: &[String]) -> bool {
    hits.iter().any(|h| match h.strip_suffix('*') {
        Some(prefix) => value.starts_with(prefix),
        None => value == h,
    })
}

/// The result field of one line (`None` for a blank line or a probe).
pub fn result_of<'a>(line: &'a str, spec: &LogSpec) -> Option<&'a str> {
    if line.trim().is_empty() || line.contains(PROBE_MARK) {
        return None;
    }
    let field = line.split_whitespace().nth(spec.field).unwrap_or("");
    Some(match &spec.separator {
        Some(sep) if !sep.is_empty() => field.split(sep.as_str()).next().unwrap_or(""),
        _ => field,
    })
}

pub fn count(text: &str, spec: &LogSpec) -> LogCounts {
    let mut c = LogCounts::default();
    for line in text.lines() {
        if let Some(r) = result_of(line, spec) {
            c.requests += 1;
            if is_hit(r, &spec.hits) {
                c.hits += 1;
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    fn squid() -> LogSpec {
        crate::ProductSpec::builtin("squid").unwrap().log
    }

    #[test]
    fn squid_lines_count_hits_by_result_code() {
        let log = "\
1795617974.010      2 127.0.0.1 TCP_MISS/200 294 GET http://s1.bench.tst/x - FIRSTUP_PARENT/127.0.0.1 -
1795617974.040      1 127.0.0.1 TCP_REFRESH_UNMODIFIED/200 293 GET http://s1.bench.tst/x - FIRSTUP_PARENT/127.0.0.1 -
1795617974.076      0 127.0.0.1 TCP_MISS/502 3439 GET http://cacheoff-ready.invalid/cacheoff-ready - HIER_NONE/- text/html
1795617979.717      0 127.0.0.1 TCP_MEM_HIT/200 300 GET http://s1.bench.tst/y - HIER_NONE/- -
1795617979.736      0 127.0.0.1 TCP_HIT_ABORTED/200 300 GET http://s2.bench.tst/y - HIER_NONE/- -

1795617979.736      0 127.0.0.1 TCP_IMS_HIT/304 300 GET http://s2.bench.tst/y - HIER_NONE/- -
";
        assert_eq!(
            count(log, &squid()),
            LogCounts {
                requests: 5,
                hits: 3
            }
        );
    }

    #[test]
    fn patterns_match_whole_values_or_prefixes() {
        let hits = vec!["HIT".to_string(), "TCP_MEM_HIT*".to_string()];
        assert!(is_hit("HIT", &hits));
        assert!(!is_hit("HITS", &hits));
        assert!(is_hit("TCP_MEM_HIT_ABORTED", &hits));
        assert!(!is_hit("TCP_MISS", &hits));
    }

    #[test]
    fn each_builtin_product_reads_its_own_log_format() {
        for (product, hit, miss) in [
            (
                "varnish",
                "1795618019 hit 200 GET http://s1.bench.tst/z",
                "1795618019 miss 200 GET http://s1.bench.tst/z",
            ),
            (
                "nginx",
                "1795618019.123 HIT 200 GET http://s1.bench.tst/z",
                "1795618019.123 REVALIDATED 200 GET http://s1.bench.tst/z",
            ),
            (
                "trafficserver",
                "1795618136.590 TCP_MEM_HIT 200 GET http://s1.bench.tst/w",
                "1795618136.725 TCP_REFRESH_HIT 200 GET http://s1.bench.tst/w",
            ),
            (
                "reference",
                "1795000000.123     42 127.0.0.1 TCP_MEM_HIT/200 1536 GET http://127.2.0.1:8080/x - HIER_NONE/- text/html",
                "1795000000.123     42 127.0.0.1 TCP_MISS/200 1536 GET http://127.2.0.1:8080/x - HIER_DIRECT/127.2.0.1 text/html",
            ),
        ] {
            let spec = crate::ProductSpec::builtin(product).unwrap().log;
            assert_eq!(
                count(&format!("{hit}\n{miss}\n"), &spec),
                LogCounts {
                    requests: 2,
                    hits: 1
                },
                "{product}"
            );
        }
    }
}
