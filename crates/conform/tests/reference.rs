//! The suite against the reference proxy, in-process, in both modes: every
//! result must be the one docs/conformance.md's table claims (the table is
//! the one source of truth), and the table must list exactly the suite's
//! checks.

use cacheoff_conform::{catalog, Mode, Origin, Report, Target};
use cacheoff_proxy::{Proxy, ProxyConfig, Upstream};
use std::collections::HashMap;
use std::sync::Arc;

const DOC: &str = include_str!("../../../docs/conformance.md");

/// The table's rows: id → (forward, reverse) expected results, `-` where
/// a check does not apply.
fn claimed() -> HashMap<String, (String, String)> {
    DOC.lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            // | id | section | checks | forward | reverse | note |
            let id = cells[1].trim_matches('`').to_string();
            let word = |c: &str| c.split_whitespace().next().unwrap_or("").to_string();
            (id, (word(cells[4]), word(cells[5])))
        })
        .collect()
}

fn start(tune: impl FnOnce(&mut ProxyConfig)) -> Proxy {
    let mut cfg = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
    cfg.memory = 64 << 20;
    cfg.workers = 2;
    tune(&mut cfg);
    Proxy::start(cfg).expect("start the reference proxy")
}

fn run(mode: Mode) -> Report {
    let origin = Arc::new(Origin::bind("127.0.0.1:0".parse().unwrap()).unwrap());
    let oa = origin.addr();
    let proxy = match mode {
        Mode::Forward => start(|_| {}),
        // As `cacheoff run` starts it for a surrogate workload.
        Mode::Reverse => start(|c| {
            let map = HashMap::from([("127.0.0.1".to_string(), oa.to_string())]);
            c.upstream = Upstream::ByHost(Arc::new(map));
            c.targeted = cacheoff_cache::Targeted::cdn();
        }),
    };
    let target = Target {
        mode,
        proxy: proxy.addr(),
        origin: oa,
        host: None,
    };
    let report = cacheoff_conform::run(target, origin);
    proxy.stop();
    report
}

fn holds_to_the_table(mode: Mode) {
    let table = claimed();
    let report = run(mode);
    let mut wrong = Vec::new();
    for c in &report.checks {
        let want = table.get(c.id).map(|(f, r)| match mode {
            Mode::Forward => f.as_str(),
            Mode::Reverse => r.as_str(),
        });
        if want != Some(c.result.name()) {
            wrong.push(format!(
                "{} ({}): got {}, table says {:?}: {}\n    {}",
                c.id,
                mode.name(),
                c.result.name(),
                want,
                c.detail,
                c.exchange.join("\n    ")
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{}\n\n{}",
        wrong.join("\n"),
        report.table()
    );
    assert!(report.checks.len() >= 60, "{} checks", report.checks.len());
    // Checks that do not apply to this mode are `-` in its column.
    for chk in catalog().iter().filter(|c| !c.applies_to(mode)) {
        let (f, r) = &table[chk.id];
        let cell = if mode == Mode::Forward { f } else { r };
        assert_eq!(
            cell,
            "-",
            "{} does not apply in {} mode",
            chk.id,
            mode.name()
        );
    }
    assert_eq!(
        report.passed + report.failed + report.optional,
        report.checks.len()
    );
}

#[test]
fn the_table_lists_exactly_the_suites_checks() {
    let mut documented: Vec<String> = claimed().into_keys().collect();
    let mut ids: Vec<String> = catalog().iter().map(|c| c.id.to_string()).collect();
    documented.sort();
    ids.sort();
    assert_eq!(documented, ids);
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(unique, ids, "check ids are unique");
}

#[test]
fn the_reference_forward_proxy_gets_the_results_the_table_claims() {
    holds_to_the_table(Mode::Forward);
}

#[test]
fn the_reference_surrogate_gets_the_results_the_table_claims() {
    holds_to_the_table(Mode::Reverse);
}
