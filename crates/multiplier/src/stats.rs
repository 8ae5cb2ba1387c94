//! Counters and histograms in fixed memory.
//!
//! Ownership: each proxy's `ProxyShared` holds atomics the client
//! workers bump (copied, dropped, not copied; unfinished by a dropped
//! copy) and a mutex-guarded
//! [`ProxyAcc`] only that proxy's copy thread records into; each client
//! worker records the Collector's replies into its own [`CollectorAcc`].
//! The interval thread swaps the interval's accumulators out (a short
//! lock, once per interval) and keeps the run's totals itself.

use crate::claim::Verdict;
use cacheoff_rundir::spe::{
    CollectorSpan, DiffMs, Example, Mismatch, ProxyCounts, ProxySpan, RtDiff, MAX_EXAMPLES,
};
use cacheoff_stats::{Latency, LatencySet};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

fn hist(sigfig: u8) -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, sigfig).expect("static histogram bounds")
}

fn record(h: &mut Histogram<u64>, us: u64) {
    h.saturating_record(us.max(1));
}

/// A histogram of microseconds shown in milliseconds.
fn latency(h: &Histogram<u64>) -> Latency {
    if h.is_empty() {
        return Latency::default();
    }
    let ms = |us: f64| us.round() / 1000.0;
    Latency {
        count: h.len(),
        mean: ms(h.mean()),
        p50: ms(h.value_at_quantile(0.5) as f64),
        p99: ms(h.value_at_quantile(0.99) as f64),
        max: ms(h.max() as f64),
    }
}

/// Response times of all, hit and miss replies.
#[derive(Clone)]
pub(crate) struct RtHists {
    all: Histogram<u64>,
    hit: Histogram<u64>,
    miss: Histogram<u64>,
}

impl RtHists {
    fn new() -> RtHists {
        RtHists {
            all: hist(3),
            hit: hist(3),
            miss: hist(3),
        }
    }

    fn record(&mut self, us: u64, hit: Option<bool>) {
        record(&mut self.all, us);
        match hit {
            Some(true) => record(&mut self.hit, us),
            Some(false) => record(&mut self.miss, us),
            None => {}
        }
    }

    fn add(&mut self, o: &RtHists) {
        let _ = self.all.add(&o.all);
        let _ = self.hit.add(&o.hit);
        let _ = self.miss.add(&o.miss);
    }

    fn set(&self) -> LatencySet {
        LatencySet {
            all: latency(&self.all),
            hit: latency(&self.hit),
            miss: latency(&self.miss),
        }
    }
}

/// Sum and count of paired differences, in microseconds.
#[derive(Clone, Copy, Default)]
struct Diff {
    sum_us: i128,
    n: u64,
}

impl Diff {
    fn ms(self) -> DiffMs {
        DiffMs {
            count: self.n,
            mean: if self.n == 0 {
                0.0
            } else {
                (self.sum_us as f64 / self.n as f64).round() / 1000.0
            },
        }
    }
}

/// What one copy came to, for the record.
pub(crate) struct CopyRecord {
    pub url: String,
    pub queue_us: u64,
    pub connect_us: Option<u64>,
    pub first_byte_us: Option<u64>,
    /// Send to last byte; `None` without a usable reply.
    pub rt_us: Option<u64>,
    pub verdict: Verdict,
    pub claimed_hit: bool,
    pub mismatch: Option<(Mismatch, String)>,
    /// The Collector's response time for the same request, once compared.
    pub collector_rt_us: Option<u64>,
}

/// One proxy's copies over a span (recorded by its copy thread).
#[derive(Clone)]
pub(crate) struct ProxyAcc {
    counts: ProxyCounts,
    by_kind: [u64; Mismatch::COUNT],
    rt: RtHists,
    connect: Histogram<u64>,
    first_byte: Histogram<u64>,
    queue: Histogram<u64>,
    diff: [Diff; 3],
    examples: Vec<Example>,
}

impl ProxyAcc {
    pub(crate) fn new() -> ProxyAcc {
        ProxyAcc {
            counts: ProxyCounts::default(),
            by_kind: [0; Mismatch::COUNT],
            rt: RtHists::new(),
            connect: hist(2),
            first_byte: hist(2),
            queue: hist(2),
            diff: [Diff::default(); 3],
            examples: Vec::new(),
        }
    }

    /// Records a copy; `kept` counts the examples kept so far per kind
    /// over the run (owned by the copy thread).
    pub(crate) fn record(&mut self, r: CopyRecord, kept: &mut [usize; Mismatch::COUNT]) {
        record(&mut self.queue, r.queue_us);
        if let Some((kind, detail)) = r.mismatch {
            self.counts.mismatches += 1;
            self.by_kind[kind as usize] += 1;
            if kept[kind as usize] < MAX_EXAMPLES {
                kept[kind as usize] += 1;
                self.examples.push(Example {
                    kind: kind.name().into(),
                    url: r.url,
                    detail,
                });
            }
        }
        let Some(rt) = r.rt_us else {
            self.counts.errors += 1;
            return;
        };
        self.counts.completed += 1;
        self.counts.claimed_hits += u64::from(r.claimed_hit);
        let hit = match r.verdict {
            Verdict::Hit => {
                self.counts.validated_hits += 1;
                true
            }
            Verdict::Miss => {
                self.counts.validated_misses += 1;
                false
            }
            Verdict::Unverified => {
                self.counts.unverified += 1;
                r.claimed_hit
            }
        };
        self.rt.record(rt, Some(hit));
        if let Some(us) = r.connect_us {
            record(&mut self.connect, us);
        }
        if let Some(us) = r.first_byte_us {
            record(&mut self.first_byte, us);
        }
        match r.collector_rt_us {
            Some(c) => {
                let d = i128::from(rt) - i128::from(c);
                for i in [2, usize::from(!hit)] {
                    self.diff[i].sum_us += d;
                    self.diff[i].n += 1;
                }
            }
            None => self.counts.uncompared += 1,
        }
    }

    pub(crate) fn add(&mut self, o: &ProxyAcc) {
        self.counts.add(&o.counts);
        for (a, b) in self.by_kind.iter_mut().zip(o.by_kind) {
            *a += b;
        }
        self.rt.add(&o.rt);
        let _ = self.connect.add(&o.connect);
        let _ = self.first_byte.add(&o.first_byte);
        let _ = self.queue.add(&o.queue);
        for (a, b) in self.diff.iter_mut().zip(o.diff) {
            a.sum_us += b.sum_us;
            a.n += b.n;
        }
        self.examples.extend(o.examples.iter().cloned());
    }

    /// Adds the counts the client workers keep (copied, dropped, ...).
    pub(crate) fn add_counts(&mut self, c: &ProxyCounts) {
        self.counts.add(c);
    }

    pub(crate) fn span(&self, name: &str) -> ProxySpan {
        ProxySpan {
            name: name.into(),
            counts: self.counts,
            mismatches_by_kind: Mismatch::ALL
                .iter()
                .filter(|k| self.by_kind[**k as usize] > 0)
                .map(|k| (k.name().to_string(), self.by_kind[*k as usize]))
                .collect(),
            rt_ms: self.rt.set(),
            connect_ms: latency(&self.connect),
            first_byte_ms: latency(&self.first_byte),
            queue_ms: latency(&self.queue),
            rt_diff_ms: RtDiff {
                hit: self.diff[0].ms(),
                miss: self.diff[1].ms(),
                all: self.diff[2].ms(),
            },
            examples: self.examples.clone(),
        }
    }
}

/// Counters the client workers bump for a proxy, and `unfinished`, which
/// a copy's [`crate::copies::Ticket`] bumps when it is dropped unrecorded.
#[derive(Default)]
pub(crate) struct ClientSideCounts {
    pub copied: AtomicU64,
    pub dropped: AtomicU64,
    pub not_copied_unsafe: AtomicU64,
    pub unfinished: AtomicU64,
}

impl ClientSideCounts {
    /// The counts since the last take.
    pub(crate) fn take(&self) -> ProxyCounts {
        ProxyCounts {
            copied: self.copied.swap(0, Ordering::Relaxed),
            dropped: self.dropped.swap(0, Ordering::Relaxed),
            not_copied_unsafe: self.not_copied_unsafe.swap(0, Ordering::Relaxed),
            unfinished: self.unfinished.swap(0, Ordering::Relaxed),
            ..ProxyCounts::default()
        }
    }
}

/// The Collector's replies over a span, as clients saw them.
#[derive(Clone)]
pub(crate) struct CollectorAcc {
    completed: u64,
    errors: u64,
    hits: u64,
    rt: RtHists,
}

impl CollectorAcc {
    pub(crate) fn new() -> CollectorAcc {
        CollectorAcc {
            completed: 0,
            errors: 0,
            hits: 0,
            rt: RtHists::new(),
        }
    }

    /// A reply relayed whole; `hit`: the Collector's own `X-Cache` claim.
    pub(crate) fn reply(&mut self, rt_us: u64, hit: Option<bool>) {
        self.completed += 1;
        self.hits += u64::from(hit == Some(true));
        self.rt.record(rt_us, hit);
    }

    pub(crate) fn error(&mut self) {
        self.errors += 1;
    }

    pub(crate) fn add(&mut self, o: &CollectorAcc) {
        self.completed += o.completed;
        self.errors += o.errors;
        self.hits += o.hits;
        self.rt.add(&o.rt);
    }

    pub(crate) fn span(&self) -> CollectorSpan {
        CollectorSpan {
            completed: self.completed,
            errors: self.errors,
            hits: self.hits,
            rt_ms: self.rt.set(),
        }
    }
}

/// Swaps an accumulator out of its mutex for a fresh one.
pub(crate) fn take<T>(m: &Mutex<T>, fresh: T) -> T {
    std::mem::replace(&mut *m.lock().unwrap_or_else(|e| e.into_inner()), fresh)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(rt: Option<u64>, verdict: Verdict, mismatch: Option<Mismatch>) -> CopyRecord {
        CopyRecord {
            url: "http://o/a".into(),
            queue_us: 10,
            connect_us: Some(100),
            first_byte_us: rt.map(|r| r / 2),
            rt_us: rt,
            verdict,
            claimed_hit: verdict == Verdict::Hit,
            mismatch: mismatch.map(|k| (k, "expected x; got y".into())),
            collector_rt_us: rt.map(|_| 3000),
        }
    }

    #[test]
    fn copies_count_by_verdict_and_examples_stop_at_five() {
        let mut acc = ProxyAcc::new();
        let mut kept = [0; Mismatch::COUNT];
        acc.record(rec(Some(1000), Verdict::Hit, None), &mut kept);
        acc.record(rec(Some(5000), Verdict::Miss, None), &mut kept);
        for _ in 0..7 {
            acc.record(
                rec(None, Verdict::Unverified, Some(Mismatch::Error)),
                &mut kept,
            );
        }
        let s = acc.span("p");
        assert_eq!(s.counts.completed, 2);
        assert_eq!(s.counts.errors, 7);
        assert_eq!(s.counts.mismatches, 7);
        assert_eq!(s.counts.validated_hits, 1);
        assert_eq!(s.counts.claimed_hits, 1);
        assert_eq!(s.mismatches_by_kind["error"], 7);
        assert_eq!(s.examples.len(), MAX_EXAMPLES);
        // Three significant digits.
        assert!((s.rt_ms.hit.mean - 1.0).abs() < 0.01, "{:?}", s.rt_ms);
        assert!((s.rt_ms.miss.mean - 5.0).abs() < 0.01, "{:?}", s.rt_ms);
        assert_eq!(s.rt_diff_ms.hit.mean, -2.0);
        assert_eq!(s.rt_diff_ms.all.mean, 0.0);
        assert_eq!(s.rt_diff_ms.all.count, 2);
        let mut total = ProxyAcc::new();
        total.add(&acc);
        total.add(&acc);
        assert_eq!(total.span("p").counts.errors, 14);
        assert_eq!(total.span("p").rt_ms.all.count, 4);
    }
}
