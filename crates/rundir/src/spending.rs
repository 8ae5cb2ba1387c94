//! What the watched product spent, per phase: the one place interval
//! records (their `resources` and traffic) become `Resources`, for the
//! summary as it is written and for a run killed before it. A Multiplier
//! run's are its own module's ([`crate::spe::spending`], [`spe`] here).

use crate::IntervalRecord;
use cacheoff_resources::{derive, IntervalUsage, Resources, Traffic};

pub use crate::spe::spending as spe;

/// The traffic of one interval, as a resource figure needs it.
/// `cached_so_far` carries the cachable bytes fetched up to here.
fn traffic(r: &IntervalRecord, cached_so_far: &mut u64, cache_size: Option<u64>) -> Traffic {
    let s = &r.stats;
    let counts = s.counts.unwrap_or_default();
    *cached_so_far += s.fill_bytes;
    Traffic {
        duration_s: r.end_s - r.start_s,
        xacts: s.xacts,
        hits: s.rt_ms.hit.count,
        misses: s.rt_ms.miss.count,
        // Every miss's body came from an origin server.
        origin_bytes: counts.bytes.saturating_sub(counts.hit_bytes),
        // What a cache could hold: all it had to store, up to its size.
        cached_bytes: cache_size.map_or(*cached_so_far, |c| (*cached_so_far).min(c)),
    }
}

/// Every phase's spending, in schedule order, from the records that carry
/// a `resources` sample; empty when none does (nothing was watched).
pub fn by_phase(
    records: &[IntervalRecord],
    source: &str,
    cache_size: Option<u64>,
) -> Vec<Resources> {
    let mut cached = 0;
    let rows: Vec<(&str, IntervalUsage, Traffic)> = records
        .iter()
        .map(|r| {
            let t = traffic(r, &mut cached, cache_size);
            (r.phase.as_str(), r.resources.clone(), t)
        })
        .filter_map(|(p, u, t)| Some((p, u?, t)))
        .collect();
    let run: Vec<(IntervalUsage, Traffic)> = rows.iter().map(|(_, u, t)| (u.clone(), *t)).collect();
    let mut phases: Vec<&str> = Vec::new();
    for (p, _, _) in &rows {
        if !phases.contains(p) {
            phases.push(p);
        }
    }
    phases
        .iter()
        .map(|name| {
            let mine: Vec<(IntervalUsage, Traffic)> = rows
                .iter()
                .filter(|(p, _, _)| p == name)
                .map(|(_, u, t)| (u.clone(), *t))
                .collect();
            derive(name, source, &mine, &run)
        })
        .collect()
}

/// The measured phase's spending out of [`by_phase`]'s.
pub fn measured(all: &[Resources], measured_phase: Option<&str>) -> Option<Resources> {
    measured_phase.and_then(|m| all.iter().find(|r| r.phase == m).cloned())
}
