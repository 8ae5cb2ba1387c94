//! The intervals hold their promises on simulated experiments: false
//! alarms near the nominal 5% (also under drift), coverage of a real
//! shift near 95%, and batch means that keep correlated interval series
//! from crying wolf. Seeded, so every run sees the same experiments;
//! `cargo test -p cacheoff-ab --test monte_carlo -- --nocapture` prints
//! the rates.

use cacheoff_ab::{batches, order, rounds, Side, Verdict};

/// SplitMix64 and Box–Muller: enough randomness for a simulation, and
/// the same on every machine.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    fn normal(&mut self, mean: f64, sd: f64) -> f64 {
        let (u, v) = (self.uniform(), self.uniform());
        mean + sd * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}

const EXPERIMENTS: usize = 2000;

/// One simulated A/B experiment in `plan`'s order: each run's figure is
/// `base + drift × its time slot + noise`, B's plus `shift`.
fn experiment(
    rng: &mut Rng,
    plan: &[[Side; 2]],
    drift: f64,
    shift: f64,
    sd: f64,
) -> (Vec<f64>, Vec<f64>) {
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for (i, pair) in plan.iter().enumerate() {
        for (j, side) in pair.iter().enumerate() {
            let t = (2 * i + j) as f64;
            let v = rng.normal(50.0 + drift * t, sd);
            match side {
                Side::A => a.push(v),
                Side::B => b.push(v + shift),
            }
        }
    }
    (a, b)
}

/// Share of experiments whose verdict is not `none`.
fn alarm_rate(seed: u64, plan: &[[Side; 2]], drift: f64) -> f64 {
    let mut rng = Rng(seed);
    let alarms = (0..EXPERIMENTS)
        .filter(|_| {
            let (a, b) = experiment(&mut rng, plan, drift, 0.0, 1.0);
            rounds("x", &a, &b, 0.95).verdict != Verdict::None
        })
        .count();
    alarms as f64 / EXPERIMENTS as f64
}

#[test]
fn paired_rounds_in_abba_order_keep_false_alarms_near_5_percent_under_drift() {
    let plan = order(5);
    let still = alarm_rate(1, &plan, 0.0);
    assert!((0.03..=0.07).contains(&still), "{still}");
    eprintln!(
        "false alarms, 5 rounds ABBA, no drift: {:.1}%",
        still * 100.0
    );
    // Drift per run in noise sds: 0.3 and 1 are 2.7 and 9 sds from the
    // first run to the last.
    for (seed, drift) in [(2, 0.3), (3, 1.0)] {
        let abba = alarm_rate(seed, &plan, drift);
        // A always first (AB AB ...) puts all the drift into B − A: the
        // order is what keeps the alarms down.
        let ab = alarm_rate(seed, &[[Side::A, Side::B]; 5], drift);
        eprintln!(
            "false alarms, 5 rounds, drift {drift} sd per run: {:.1}% ABBA, {:.1}% always AB",
            abba * 100.0,
            ab * 100.0
        );
        if drift < 1.0 {
            assert!((0.03..=0.07).contains(&abba), "{abba}");
        } else {
            // A drift this strong is cancelled from the mean difference
            // but widens the interval (B's slot alternates between first
            // and second): fewer alarms than nominal, never more.
            assert!(abba <= 0.05, "{abba}");
            assert!(ab > 3.0 * abba, "{ab} vs {abba}");
        }
    }
}

#[test]
fn a_real_shift_is_covered_about_95_percent_of_the_time_and_mostly_detected() {
    let mut rng = Rng(7);
    let (shift, plan) = (1.0, order(6));
    let (mut covered, mut detected) = (0, 0);
    for _ in 0..EXPERIMENTS {
        let (a, b) = experiment(&mut rng, &plan, 0.0, shift, 0.5);
        let r = rounds("x", &a, &b, 0.95);
        covered += usize::from(r.ci_low <= shift && shift <= r.ci_high);
        detected += usize::from(r.verdict == Verdict::Higher);
        assert_ne!(r.verdict, Verdict::Lower, "{r:?}");
    }
    let (cov, det) = (
        covered as f64 / EXPERIMENTS as f64,
        detected as f64 / EXPERIMENTS as f64,
    );
    eprintln!(
        "shift 1.0, sd 0.5, 6 rounds: coverage {:.1}%, detected {:.1}%",
        cov * 100.0,
        det * 100.0
    );
    assert!((0.93..=0.97).contains(&cov), "{cov}");
    assert!(det > 0.7, "{det}");
}

/// An AR(1) series of `n` intervals around `mean`: x_t = φ x_{t−1} + e_t,
/// started in its stationary distribution.
fn ar1(rng: &mut Rng, n: usize, phi: f64, mean: f64) -> Vec<f64> {
    let mut x = rng.normal(0.0, 1.0 / (1.0 - phi * phi).sqrt());
    (0..n)
        .map(|_| {
            let v = mean + x;
            x = phi * x + rng.normal(0.0, 1.0);
            v
        })
        .collect()
}

/// Share of pairs of same-mean AR(1) runs of `n` intervals that
/// `batches` calls different.
fn batch_alarm_rate(seed: u64, n: usize, phi: f64) -> f64 {
    let mut rng = Rng(seed);
    let alarms = (0..EXPERIMENTS)
        .filter(|_| {
            let (a, b) = (ar1(&mut rng, n, phi, 10.0), ar1(&mut rng, n, phi, 10.0));
            batches("x", &a, &b, 0.95).verdict != Verdict::None
        })
        .count();
    alarms as f64 / EXPERIMENTS as f64
}

/// The same judged as if intervals were independent (Welch on all of
/// them): what batching protects against.
fn naive_alarm_rate(seed: u64, n: usize, phi: f64) -> f64 {
    let mut rng = Rng(seed);
    let alarms = (0..EXPERIMENTS)
        .filter(|_| {
            let (a, b) = (ar1(&mut rng, n, phi, 10.0), ar1(&mut rng, n, phi, 10.0));
            let (ma, mb) = (
                a.iter().sum::<f64>() / n as f64,
                b.iter().sum::<f64>() / n as f64,
            );
            let var = |v: &[f64], m: f64| {
                v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n as f64 - 1.0)
            };
            let se = ((var(&a, ma) + var(&b, mb)) / n as f64).sqrt();
            ((mb - ma) / se).abs() > cacheoff_ab::t_quantile(0.975, 2.0 * n as f64 - 2.0)
        })
        .count();
    alarms as f64 / EXPERIMENTS as f64
}

#[test]
fn batch_means_keep_correlated_interval_series_from_false_alarms() {
    // 60 intervals: a 5-minute plateau of 5 s intervals.
    let rate = batch_alarm_rate(4, 60, 0.5);
    let naive = naive_alarm_rate(4, 60, 0.5);
    eprintln!(
        "AR(1) phi 0.5, 60 intervals each: false alarms {:.1}% with batch means, {:.1}% treating intervals as independent",
        rate * 100.0,
        naive * 100.0
    );
    assert!(rate <= 0.10, "{rate}");
    assert!(naive > 0.15, "{naive}");
    for n in [12, 24, 240] {
        eprintln!(
            "AR(1) phi 0.5, {n} intervals each: false alarms {:.1}%",
            batch_alarm_rate(5 + n as u64, n, 0.5) * 100.0
        );
    }
    // Longer runs get longer batches, whose means are less correlated.
    assert!(batch_alarm_rate(6, 240, 0.5) <= 0.08);
}
