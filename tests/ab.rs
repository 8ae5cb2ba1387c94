//! `cacheoff ab`'s proofs on short runs through the reference proxy
//! in-process (ignored by a plain `cargo test`: minutes of runs; `.ci/run`
//! runs them): against itself, "no difference detected" for the hit
//! response time in most of 20 trials, the false alarms allowed set from
//! the 5% the method claims so that correct code fails the test less than
//! once in 10,000 runs; against itself with a fault that answers every
//! hit 1 ms late, the difference detected and its interval covering the
//! delay the fault added (1 ms and the wake-up after it, as the proxy
//! measured it).

mod support;

use cacheoff_ab::{AbReport, FigureResult, Verdict};
use cacheoff_agent::StopHandle;
use cacheoff_proxy::{Fault, Faults, Proxy};
use cacheoff_run::ab::{experiment, Contestant, Experiment};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::Ordering;
use support::{proxy, run};

const HIT_MEAN: &str = "rt_ms.hit.mean";

/// A short experiment of `rounds` rounds through `a` and `b`.
fn trial(dir: &Path, a: SocketAddr, b: SocketAddr, rounds: usize) -> AbReport {
    let e = Experiment {
        workload: run::simple(300.0, 20, 4, 0.5, 1.5),
        a: Contestant::Addr {
            addr: a,
            watch: None,
        },
        b: Contestant::Addr {
            addr: b,
            watch: None,
        },
        rounds,
        workers: run::WORKERS,
        out: dir.to_path_buf(),
        quiet: true,
    };
    experiment(&e, &StopHandle::new()).unwrap_or_else(|e| panic!("{:#}", anyhow::Error::from(e)))
}

fn figure<'a>(r: &'a AbReport, name: &str) -> &'a FigureResult {
    r.figures
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no {name} in {:?}", r.figures))
}

/// The two tests' experiments must not overlap: each would be the other's
/// noise.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn reference() -> Proxy {
    proxy::start(|c| c.workers = 1)
}

#[test]
#[ignore = "minutes of runs; .ci/run runs it"]
fn the_reference_proxy_against_itself_shows_no_difference_in_most_trials() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let (a, b) = (reference(), reference());
    let tmp = tempfile::tempdir().unwrap();
    // Two trials at a time: the machine's noise is in A and B alike.
    let verdicts: Vec<Verdict> = std::thread::scope(|s| {
        let half = |k: usize| {
            let (tmp, a, b) = (tmp.path(), a.addr(), b.addr());
            s.spawn(move || {
                (0..10)
                    .map(|i| {
                        let r = trial(&tmp.join(format!("t{k}-{i}")), a, b, 4);
                        let f = figure(&r, HIT_MEAN);
                        assert!(f.n == 4 && f.ci_low < f.ci_high, "{f:?}");
                        f.verdict
                    })
                    .collect::<Vec<_>>()
            })
        };
        let (x, y) = (half(0), half(1));
        x.join()
            .unwrap()
            .into_iter()
            .chain(y.join().unwrap())
            .collect()
    });
    let none = verdicts.iter().filter(|v| **v == Verdict::None).count();
    let allowed = false_alarms_allowed(verdicts.len(), 1.0 - cacheoff_ab::LEVEL, 1e-4);
    eprintln!(
        "no difference detected in {none} of {} trials (at least {} needed): {verdicts:?}",
        verdicts.len(),
        verdicts.len() - allowed
    );
    assert!(none + allowed >= verdicts.len(), "{verdicts:?}");
}

/// The most false alarms `n` trials of a method wrong with probability
/// `p` each may give while a correct method fails with probability under
/// `risk`: the smallest k with P(X > k) < risk, X ~ Binomial(n, p).
fn false_alarms_allowed(n: usize, p: f64, risk: f64) -> usize {
    let binom = |k: usize| -> f64 {
        let ways: f64 = (0..k).map(|i| (n - i) as f64 / (i + 1) as f64).product();
        ways * p.powi(k as i32) * (1.0 - p).powi((n - k) as i32)
    };
    (0..=n)
        .find(|&k| (k + 1..=n).map(binom).sum::<f64>() < risk)
        .unwrap_or(n)
}

#[test]
fn the_false_alarm_allowance_follows_the_binomial_tail() {
    // 20 trials of a 95% interval: P(X > 6) = 3.4e-5, P(X > 5) = 3.3e-4.
    assert_eq!(false_alarms_allowed(20, 0.05, 1e-4), 6);
    assert_eq!(false_alarms_allowed(20, 0.05, 0.02), 3);
}

#[test]
#[ignore = "minutes of runs; .ci/run runs it"]
fn a_hit_made_1_ms_slower_is_detected_and_its_interval_covers_1_ms() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    let a = reference();
    let b = proxy::start(|c| {
        c.workers = 1;
        c.faults = Faults::new(vec![(Fault::SlowHit, 1.0)]);
    });
    let tmp = tempfile::tempdir().unwrap();
    // A 95% interval misses the truth in one experiment of 20 by design:
    // up to three experiments, one of which must detect and cover it.
    let mut tried = Vec::new();
    for k in 0..3 {
        let before = slowed(&b);
        let dir = tmp.path().join(format!("e{k}"));
        let r = trial(&dir, a.addr(), b.addr(), 6);
        let (n, us) = slowed(&b);
        // What the fault added: 1 ms asked for, plus the wake-up after it
        // (more on a busy machine), as the proxy measured it.
        let added_ms = (us - before.1) as f64 / (n - before.0) as f64 / 1000.0;
        assert!(added_ms >= 1.0, "{added_ms} ms");
        let f = figure(&r, HIT_MEAN).clone();
        eprintln!(
            "{}\nthe fault added {added_ms:.3} ms",
            cacheoff_ab::report_table(&r)
        );
        if f.verdict == Verdict::Higher && f.ci_low <= added_ms && added_ms <= f.ci_high {
            // Misses are not what was slowed.
            let miss = figure(&r, "rt_ms.miss.mean");
            assert!(miss.diff < f.diff, "{miss:?} against {f:?}");
            let on_disk: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(dir.join("ab.json")).unwrap())
                    .unwrap();
            let row = on_disk["figures"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["name"] == HIT_MEAN)
                .unwrap();
            assert_eq!(row["verdict"], "higher");
            assert_eq!(on_disk["runs"].as_array().unwrap().len(), 6);
            return;
        }
        tried.push((added_ms, f));
    }
    panic!("never detected and covered: {tried:?}");
}

/// Hits slowed by the fault so far, and their delays' sum in µs.
fn slowed(p: &Proxy) -> (u64, u64) {
    let st = p.stats();
    (
        st.slowed_hits.load(Ordering::Relaxed),
        st.slowed_hits_us.load(Ordering::Relaxed),
    )
}
