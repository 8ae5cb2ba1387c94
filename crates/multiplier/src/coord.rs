//! The interval thread: every `interval` it swaps each accumulator out,
//! adds it to the run's totals (which it alone owns), appends the
//! interval's record and calls the hook; at stop it writes the last
//! (partial) interval and the summary.

use crate::stats::{take, CollectorAcc, ProxyAcc};
use crate::{MultiplierError, Shared};
use cacheoff_rundir::spe::{Interval, SpeDir, Summary, SPE_FORMAT_VERSION};
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::Instant;

struct Totals {
    requests: u64,
    refused: u64,
    collector: CollectorAcc,
    proxies: Vec<ProxyAcc>,
}

pub(crate) fn run(
    sh: Arc<Shared>,
    mut dir: SpeDir,
    start: Instant,
    stop: Receiver<()>,
) -> Result<Summary, MultiplierError> {
    let mut totals = Totals {
        requests: 0,
        refused: 0,
        collector: CollectorAcc::new(),
        proxies: sh.proxies.iter().map(|_| ProxyAcc::new()).collect(),
    };
    let mut first_error = None;
    // The records, for what the watched proxies spent over the run.
    let mut watched = Vec::new();
    let mut n: u32 = 0;
    let mut from = 0.0;
    loop {
        let next = start + sh.cfg.interval * (n + 1);
        let wait = next.saturating_duration_since(Instant::now());
        let stopping = !matches!(stop.recv_timeout(wait), Err(RecvTimeoutError::Timeout));
        let to = start.elapsed().as_secs_f64();
        if !stopping || to > from {
            let mut record = interval(&sh, &mut totals, n, from, to);
            if let Some(sample) = &sh.cfg.sample {
                record.resources = sample();
                watched.push(record.clone());
            }
            if let Err(e) = dir.interval(&record) {
                first_error.get_or_insert(e);
            }
            if let Some(hook) = &sh.cfg.on_interval {
                hook(&record);
            }
            n += 1;
            from = to;
        }
        if stopping {
            break;
        }
    }
    let proxies = sh
        .proxies
        .iter()
        .zip(&totals.proxies)
        .map(|(p, acc)| acc.span(&p.name))
        .collect();
    let mut summary = Summary::derive(
        start.elapsed().as_secs_f64(),
        totals.requests,
        totals.refused,
        totals.collector.span(),
        proxies,
    );
    summary.resources = cacheoff_rundir::spending::spe(&watched, &sh.cfg.watched);
    let finished = dir.finish(&summary);
    match first_error {
        Some(e) => Err(e.into()),
        None => finished.map(|_| summary).map_err(Into::into),
    }
}

fn interval(sh: &Shared, totals: &mut Totals, n: u32, from: f64, to: f64) -> Interval {
    let requests = sh.requests.swap(0, Ordering::Relaxed);
    let refused = sh.refused.swap(0, Ordering::Relaxed);
    totals.requests += requests;
    totals.refused += refused;
    let mut collector = CollectorAcc::new();
    for w in &sh.collector {
        collector.add(&take(w, CollectorAcc::new()));
    }
    totals.collector.add(&collector);
    let proxies = sh
        .proxies
        .iter()
        .zip(&mut totals.proxies)
        .map(|(p, total)| {
            let mut acc = take(&p.acc, ProxyAcc::new());
            acc.add_counts(&p.client.take());
            total.add(&acc);
            acc.span(&p.name)
        })
        .collect();
    Interval {
        format_version: SPE_FORMAT_VERSION,
        interval: n,
        start_s: round3(from),
        end_s: round3(to),
        requests,
        refused,
        collector: collector.span(),
        proxies,
        resources: Default::default(),
    }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}
