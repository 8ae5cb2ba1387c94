//! Per-phase figures from interval records and the traffic of the same
//! intervals. Pure arithmetic: no I/O.

use crate::IntervalUsage;

/// The traffic of one interval (the caller fills it from the run's stats).
#[derive(Clone, Copy, Debug, Default)]
pub struct Traffic {
    pub duration_s: f64,
    pub xacts: u64,
    pub hits: u64,
    pub misses: u64,
    /// Bytes fetched from origin servers (what a cache had to store).
    pub origin_bytes: u64,
    /// Bytes the cache holds at the end of the interval.
    pub cached_bytes: u64,
}

/// What a product spent over one phase. Persisted in summary.json: the
/// field names are an external interface.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Resources {
    pub phase: String,
    /// Where the figures come from (`Target::describe`, `Sampler::sources`).
    pub source: String,
    pub cpu_user_ms: f64,
    pub cpu_sys_ms: f64,
    /// (user + system) CPU time over the phase's duration.
    pub cores_used: f64,
    /// `None` when the phase had no transactions.
    pub cpu_ms_per_1k_xacts: Option<f64>,
    /// By regression over the whole run: see [`per_hit_and_miss`].
    pub cpu_ms_per_1k_hits: Option<f64>,
    pub cpu_ms_per_1k_misses: Option<f64>,
    /// The highest peak level recorded by the phase's end (a cgroup's or
    /// process's peak is since the sampler began, so earlier phases' count).
    pub mem_peak_bytes: u64,
    /// `mem_peak_bytes` over the bytes cached at the phase's last interval.
    pub mem_per_cached_byte: Option<f64>,
    pub disk_read_bytes: u64,
    pub disk_write_bytes: u64,
    pub disk_read_ios: Option<u64>,
    pub disk_write_ios: Option<u64>,
    /// Disk bytes written per byte fetched from origin servers; `None`
    /// when nothing was fetched.
    pub write_amplification: Option<f64>,
    /// Transactions per second per core used.
    pub requests_per_core: Option<f64>,
    pub fds_max: u64,
    pub threads_max: u64,
}

/// Divides, or `None` when the divisor is not positive.
fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// Sums I/O counts, `None` when no interval had them.
fn sum_ios(v: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    v.fold(None, |acc, x| match (acc, x) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    })
}

/// One phase's `Resources` from its intervals, with the per-hit and
/// per-miss CPU estimated over all of the run's intervals.
pub fn derive(
    phase: &str,
    source: &str,
    phase_intervals: &[(IntervalUsage, Traffic)],
    run_intervals: &[(IntervalUsage, Traffic)],
) -> Resources {
    let u = || phase_intervals.iter().map(|(u, _)| u);
    let t = || phase_intervals.iter().map(|(_, t)| t);
    let cpu_user_ms: f64 = u().map(|u| u.cpu_user_ms).sum();
    let cpu_sys_ms: f64 = u().map(|u| u.cpu_sys_ms).sum();
    let cpu_ms = cpu_user_ms + cpu_sys_ms;
    let duration: f64 = t().map(|t| t.duration_s).sum();
    let xacts: u64 = t().map(|t| t.xacts).sum();
    let origin: u64 = t().map(|t| t.origin_bytes).sum();
    let cores_used = ratio(cpu_ms / 1000.0, duration).unwrap_or(0.0);
    let mem_peak_bytes = u()
        .map(|u| u.mem_peak_bytes.max(u.mem_bytes))
        .max()
        .unwrap_or(0);
    let cached = phase_intervals.last().map_or(0, |(_, t)| t.cached_bytes);
    let disk_write_bytes = u().map(|u| u.disk_write_bytes).sum();
    let (per_hit, per_miss) = match per_hit_and_miss(run_intervals) {
        Some((h, m)) => (Some(h), Some(m)),
        None => (None, None),
    };
    Resources {
        phase: phase.to_string(),
        source: source.to_string(),
        cpu_user_ms,
        cpu_sys_ms,
        cores_used,
        cpu_ms_per_1k_xacts: ratio(cpu_ms * 1000.0, xacts as f64),
        cpu_ms_per_1k_hits: per_hit,
        cpu_ms_per_1k_misses: per_miss,
        mem_peak_bytes,
        mem_per_cached_byte: ratio(mem_peak_bytes as f64, cached as f64)
            .filter(|_| !source.contains(crate::SHARED_MEMORY)),
        disk_read_bytes: u().map(|u| u.disk_read_bytes).sum(),
        disk_write_bytes,
        disk_read_ios: sum_ios(u().map(|u| u.disk_read_ios)),
        disk_write_ios: sum_ios(u().map(|u| u.disk_write_ios)),
        write_amplification: ratio(disk_write_bytes as f64, origin as f64),
        requests_per_core: ratio(xacts as f64, duration).and_then(|rate| ratio(rate, cores_used)),
        fds_max: u().map(|u| u.fds).max().unwrap_or(0),
        threads_max: u().map(|u| u.threads).max().unwrap_or(0),
    }
}

/// Fewest intervals with traffic the regression needs (3 unknowns + 1).
const MIN_INTERVALS: usize = 4;

/// The design is taken as singular when the hit rate and the miss rate are
/// this close to linear dependence (1 - r², their correlation squared):
/// a constant hit ratio, or a constant transaction rate (then only the
/// difference of the two costs shows), with a little noise. |r| > 0.995
/// leaves the costs to that noise.
const MIN_INDEPENDENCE: f64 = 0.01;

/// CPU ms per 1,000 hits and per 1,000 misses, by least squares over the
/// intervals with traffic: `cpu_ms_i = c0·duration_i + h·hits_i +
/// m·misses_i`, where `c0` is the CPU spent per second whatever the
/// traffic. Solved on rates (each interval divided by its duration,
/// weighted by it), which is ordinary least squares when intervals are
/// equally long, and keeps a short last interval from counting as much
/// as a whole one.
///
/// `None` when fewer than 4 intervals had traffic, when the design is
/// (near) singular (see `MIN_INDEPENDENCE`: a run whose hit ratio, or
/// whose rate, never changed), or when `h` or `m` comes out negative: a
/// hit or a miss cannot give CPU back, so a negative cost says the model
/// does not fit the run (CPU driven by something else, such as a cache's
/// background work), and the other cost is not to be trusted either.
/// `c0` is not reported, so its sign is not checked.
pub fn per_hit_and_miss(run_intervals: &[(IntervalUsage, Traffic)]) -> Option<(f64, f64)> {
    // (weight, cpu ms/s, hits/s, misses/s)
    let rows: Vec<[f64; 4]> = run_intervals
        .iter()
        .filter(|(_, t)| t.xacts > 0 && t.duration_s > 0.0)
        .map(|(u, t)| {
            let d = t.duration_s;
            let cpu = u.cpu_user_ms + u.cpu_sys_ms;
            [d, cpu / d, t.hits as f64 / d, t.misses as f64 / d]
        })
        .collect();
    if rows.len() < MIN_INTERVALS {
        return None;
    }
    let w: f64 = rows.iter().map(|r| r[0]).sum();
    let mean = |k: usize| rows.iter().map(|r| r[0] * r[k]).sum::<f64>() / w;
    let (y, a, b) = (mean(1), mean(2), mean(3));
    let s = |f: &dyn Fn(&[f64; 4]) -> f64| rows.iter().map(|r| r[0] * f(r)).sum::<f64>();
    let saa = s(&|r| (r[2] - a) * (r[2] - a));
    let sbb = s(&|r| (r[3] - b) * (r[3] - b));
    let sab = s(&|r| (r[2] - a) * (r[3] - b));
    let say = s(&|r| (r[2] - a) * (r[1] - y));
    let sby = s(&|r| (r[3] - b) * (r[1] - y));
    let det = saa * sbb - sab * sab;
    if saa <= 0.0 || sbb <= 0.0 || det <= MIN_INDEPENDENCE * saa * sbb {
        return None;
    }
    let h = (sbb * say - sab * sby) / det * 1000.0;
    let m = (saa * sby - sab * say) / det * 1000.0;
    (h >= 0.0 && m >= 0.0 && h.is_finite() && m.is_finite()).then_some((h, m))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interval whose CPU follows the model exactly, plus `noise` ms.
    fn interval(dur: f64, hits: u64, misses: u64, noise: f64) -> (IntervalUsage, Traffic) {
        // 50 ms/s idle, 0.02 ms a hit, 0.1 ms a miss; user:sys 3:1.
        let cpu = 50.0 * dur + 0.02 * hits as f64 + 0.1 * misses as f64 + noise;
        let u = IntervalUsage {
            cpu_user_ms: cpu * 0.75,
            cpu_sys_ms: cpu * 0.25,
            ..IntervalUsage::default()
        };
        let t = Traffic {
            duration_s: dur,
            xacts: hits + misses,
            hits,
            misses,
            ..Traffic::default()
        };
        (u, t)
    }

    /// A fill at 500/s without hits, then measured intervals at 800/s
    /// with 40-60% hits, a short last one; deterministic noise.
    fn run(noise: f64) -> Vec<(IntervalUsage, Traffic)> {
        let mut v = Vec::new();
        for i in 0..6 {
            let sign = if i % 2 == 0 { 1.0 } else { -1.0 };
            v.push(interval(5.0, 0, 2500 + 40 * i, sign * noise));
        }
        for i in 0..8u64 {
            let hits = 1600 + 100 * (i % 5);
            let sign = if i % 3 == 0 { 1.0 } else { -0.5 };
            v.push(interval(5.0, hits, 4000 - hits, sign * noise));
        }
        v.push(interval(2.0, 800, 800, 0.0));
        v
    }

    #[test]
    fn the_regression_recovers_known_costs() {
        let (h, m) = per_hit_and_miss(&run(0.0)).unwrap();
        assert!(
            (h - 20.0).abs() < 1e-6 && (m - 100.0).abs() < 1e-6,
            "{h} {m}"
        );
        let (h, m) = per_hit_and_miss(&run(3.0)).unwrap();
        assert!((h - 20.0).abs() < 2.0 && (m - 100.0).abs() < 5.0, "{h} {m}");
    }

    #[test]
    fn degenerate_runs_give_no_costs() {
        let full = run(0.0);
        assert_eq!(per_hit_and_miss(&full[..3]), None, "too few intervals");
        // A constant hit ratio: hits are a fixed share of misses.
        let constant: Vec<_> = (1..10u64)
            .map(|i| interval(5.0, 100 * i, 300 * i, 0.0))
            .collect();
        assert_eq!(per_hit_and_miss(&constant), None);
        // A constant rate, a varying ratio: hits + misses ∝ duration.
        let rate: Vec<_> = (1..10u64)
            .map(|i| interval(5.0, 100 * i, 4000 - 100 * i, 0.0))
            .collect();
        assert_eq!(per_hit_and_miss(&rate), None);
        // CPU that falls as misses grow: the model does not fit.
        let mut wrong = full.clone();
        for (u, t) in &mut wrong {
            u.cpu_user_ms = 1000.0 - 0.05 * t.misses as f64;
            u.cpu_sys_ms = 0.0;
        }
        assert_eq!(per_hit_and_miss(&wrong), None);
        assert_eq!(per_hit_and_miss(&[]), None);
    }

    #[test]
    fn a_phase_s_figures_follow_from_its_intervals() {
        let i = |user, sys, peak, wr, fds, origin, cached| {
            let u = IntervalUsage {
                cpu_user_ms: user,
                cpu_sys_ms: sys,
                mem_bytes: peak / 2,
                mem_peak_bytes: peak,
                disk_read_bytes: 10,
                disk_write_bytes: wr,
                disk_write_ios: Some(3),
                fds,
                threads: 4,
                ..IntervalUsage::default()
            };
            let t = Traffic {
                duration_s: 5.0,
                xacts: 2_000,
                hits: 500,
                misses: 1_500,
                origin_bytes: origin,
                cached_bytes: cached,
            };
            (u, t)
        };
        let phase = [
            i(3000.0, 1000.0, 100 << 20, 30 << 20, 50, 10 << 20, 40 << 20),
            i(4000.0, 2000.0, 120 << 20, 10 << 20, 70, 10 << 20, 50 << 20),
        ];
        let r = derive("meas", "pid 1", &phase, &phase);
        // 10 s of CPU over 10 s; 10,000 ms over 4,000 xacts.
        assert_eq!(
            (r.cpu_user_ms, r.cpu_sys_ms, r.cores_used),
            (7000.0, 3000.0, 1.0)
        );
        assert_eq!(r.cpu_ms_per_1k_xacts, Some(2500.0));
        assert_eq!(r.requests_per_core, Some(400.0));
        assert_eq!(r.mem_peak_bytes, 120 << 20);
        assert_eq!(r.mem_per_cached_byte, Some(120.0 / 50.0));
        assert_eq!(r.write_amplification, Some(2.0));
        assert_eq!((r.disk_read_bytes, r.disk_write_bytes), (20, 40 << 20));
        assert_eq!((r.disk_read_ios, r.disk_write_ios), (None, Some(6)));
        assert_eq!((r.fds_max, r.threads_max), (70, 4));
        assert_eq!((r.cpu_ms_per_1k_hits, r.cpu_ms_per_1k_misses), (None, None));
        assert_eq!((r.phase.as_str(), r.source.as_str()), ("meas", "pid 1"));

        // Memory shared with what is not watched says nothing per cached byte.
        let shared = format!(
            "threads proxy-* of pid 1 (memory: {})",
            crate::SHARED_MEMORY
        );
        let in_process = derive("meas", &shared, &phase, &[]);
        assert_eq!(in_process.mem_per_cached_byte, None);
        assert_eq!(in_process.mem_peak_bytes, 120 << 20);

        let empty = derive("idle", "x", &[], &[]);
        assert_eq!(empty.cores_used, 0.0);
        assert_eq!(empty.cpu_ms_per_1k_xacts, None);
        assert_eq!(empty.write_amplification, None);
        assert_eq!(empty.requests_per_core, None);
        assert_eq!(empty.mem_per_cached_byte, None);

        let with_run = derive("meas", "pid 1", &phase, &run(0.0));
        let h = with_run.cpu_ms_per_1k_hits.unwrap();
        assert!((h - 20.0).abs() < 1e-6, "{h}");
    }
}
