//! An experiment round by round: every round's two runs in [`order`],
//! each run by a [`RoundRunner`] (runs through the proxies under test:
//! `cacheoff ab`; a model in tests), then every figure judged over the
//! rounds ([`judge_rounds`]) into the [`AbReport`].

use crate::judge::judge_rounds;
use crate::report::{order, AbReport, RoundRuns, Side, METHOD_PAIRED};
use serde_json::Value;

/// The confidence level of every interval of an experiment.
pub const LEVEL: f64 = 0.95;

/// What an experiment needs from whoever runs its runs. It is called
/// from one thread, in order: before each run `stopped`, then `run`.
pub trait RoundRunner {
    type Error;
    /// Runs `side` of round `round` (from 0) into the run directory named
    /// `dir` (`round-03-b`); that run's `summary.json`, as read back. The
    /// two runs of a round see the same requests, and each round new ones.
    fn run(&mut self, round: usize, side: Side, dir: &str) -> Result<Value, Self::Error>;
    /// Why the experiment must end before its next run (it was
    /// interrupted), if it must.
    fn stopped(&mut self) -> Option<Self::Error>;
}

/// An experiment: its rounds and what its record says of it.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The workload's name.
    pub workload: String,
    /// What A and B are (an address or a product name).
    pub a: String,
    pub b: String,
    pub rounds: usize,
    /// Length of each run's plateau, in seconds.
    pub plateau_s: f64,
}

/// Runs every round of `plan` through `runner`, then judges them.
pub fn experiment<R: RoundRunner>(plan: &Plan, runner: &mut R) -> Result<AbReport, R::Error> {
    let mut runs = Vec::new();
    let mut summaries: Vec<[Value; 2]> = Vec::new();
    for (round, sides) in order(plan.rounds).into_iter().enumerate() {
        let mut pair: [Option<Value>; 2] = [None, None];
        for side in sides {
            if let Some(e) = runner.stopped() {
                return Err(e);
            }
            let slot = usize::from(side == Side::B);
            pair[slot] = Some(runner.run(round, side, &run_name(round, side))?);
        }
        let [Some(sa), Some(sb)] = pair else {
            unreachable!("a round runs both sides")
        };
        summaries.push([sa, sb]);
        runs.push(RoundRuns {
            round,
            first: sides[0],
            a_dir: run_name(round, Side::A),
            b_dir: run_name(round, Side::B),
        });
    }
    let pairs: Vec<[&Value; 2]> = summaries.iter().map(|[a, b]| [a, b]).collect();
    Ok(AbReport {
        workload: plan.workload.clone(),
        a: plan.a.clone(),
        b: plan.b.clone(),
        rounds: plan.rounds,
        plateau_s: plan.plateau_s,
        method: METHOD_PAIRED.into(),
        level: LEVEL,
        runs,
        figures: judge_rounds(&pairs, LEVEL),
    })
}

/// `round-03-b`: rounds from 1, as printed.
pub fn run_name(round: usize, side: Side) -> String {
    let s = match side {
        Side::A => "a",
        Side::B => "b",
    };
    format!("round-{:02}-{s}", round + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// B's hits 2 ms slower than A's, give or take a little per round,
    /// both drifting alike from round to round.
    struct Model {
        ran: Vec<(usize, Side, String)>,
        stop_after: Option<usize>,
    }

    impl RoundRunner for Model {
        type Error = String;
        fn run(&mut self, round: usize, side: Side, dir: &str) -> Result<Value, String> {
            self.ran.push((round, side, dir.to_string()));
            let drift = [0.1, -0.2, 0.15, -0.05][round % 4];
            let noise = [0.1, -0.1, 0.05, -0.05][round % 4];
            let hit = 5.0 + drift + if side == Side::B { 2.0 + noise } else { 0.0 };
            Ok(json!({
                "measured_phase": "meas",
                "phases": [{"name": "meas", "xacts": 1000, "rt_ms": {"hit": {"mean": hit}}}],
                "total": {"name": "total"}
            }))
        }
        fn stopped(&mut self) -> Option<String> {
            (Some(self.ran.len()) == self.stop_after).then(|| "stopped".to_string())
        }
    }

    fn plan(rounds: usize) -> Plan {
        Plan {
            workload: "w".into(),
            a: "127.0.0.1:1".into(),
            b: "squid".into(),
            rounds,
            plateau_s: 2.0,
        }
    }

    #[test]
    fn every_round_runs_both_sides_in_abba_order_and_the_figures_are_judged() {
        let mut m = Model {
            ran: Vec::new(),
            stop_after: None,
        };
        let r = experiment(&plan(4), &mut m).unwrap();
        let sides: Vec<Side> = m.ran.iter().map(|(_, s, _)| *s).collect();
        use Side::{A, B};
        assert_eq!(sides, [A, B, B, A, B, A, A, B]);
        assert_eq!(m.ran[3], (1, A, "round-02-a".to_string()));
        assert_eq!((r.rounds, r.runs.len(), r.level), (4, 4, LEVEL));
        assert_eq!(r.runs[1].first, B);
        assert_eq!((r.a.as_str(), r.b.as_str()), ("127.0.0.1:1", "squid"));
        let hit = r
            .figures
            .iter()
            .find(|f| f.name == "rt_ms.hit.mean")
            .unwrap();
        assert_eq!(hit.n, 4);
        assert!(hit.ci_low < 2.0 && 2.0 < hit.ci_high, "{hit:?}");
        assert_eq!(hit.verdict, crate::Verdict::Higher);
    }

    #[test]
    fn an_interruption_ends_the_experiment_before_the_next_run() {
        let mut m = Model {
            ran: Vec::new(),
            stop_after: Some(3),
        };
        assert_eq!(experiment(&plan(4), &mut m).unwrap_err(), "stopped");
        assert_eq!(m.ran.len(), 3);
    }
}
