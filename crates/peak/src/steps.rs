//! A search step by step: the loop around [`find`] that has a
//! [`StepRunner`] run each step (a run through the proxy under test:
//! `cacheoff_run::peak`; a model in tests), judges the step's figures and
//! keeps the record of the search, `peak.json`'s [`Peak`], which the
//! runner keeps after every step, so an interrupted search leaves its
//! steps behind.

use crate::{find, Figures, Limits, Outcome, Role, SearchConfig};
use cacheoff_rundir::peak::{Limit, Peak, PeakStep, PEAK_FORMAT, PEAK_VERSION};
use cacheoff_rundir::Summary;

/// What a search needs from whoever runs its steps. The search calls it
/// from one thread, in order: [`StepRunner::record`] once first, then
/// for each step `stopped`, `rest` (not before a first step with no
/// warm-up before it), `step`, `record`, `say`; `record` once last.
pub trait StepRunner {
    type Error;
    /// Runs the step called `name` (a directory's name: `step-03-262.5xps`)
    /// at `load`, a rate or (closed loop) robots; its measured figures.
    fn step(&mut self, name: &str, load: f64) -> Result<Figures, Self::Error>;
    /// Keeps the search so far.
    fn record(&mut self, peak: &Peak) -> Result<(), Self::Error>;
    /// Tells how a step went (one line).
    fn say(&mut self, line: &str);
    /// A pause before a step, for the proxy to drain what the step before
    /// it (or the warm-up) left queued.
    fn rest(&mut self);
    /// Why the search must end before its next step (it was interrupted),
    /// if it must.
    fn stopped(&mut self) -> Option<Self::Error>;
}

/// A search of one workload's plateau.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The workload's name, for the record.
    pub workload: String,
    /// Steps are robots of a closed loop, not rates.
    pub closed_loop: bool,
    /// The first load tried.
    pub start: f64,
    pub limits: Limits,
    /// Relative width of the bracket the bisection stops at.
    pub precision: f64,
    /// Highest load tried.
    pub max_load: f64,
    /// Most steps before the confirmation.
    pub max_steps: usize,
    /// The warm-up ran before the search (into `warmup/`).
    pub warmed: bool,
}

/// Runs the search `plan` through `runner`; the record it ended with. A
/// search that found no peak is no error here: `peak_rate_xps` is `None`.
pub fn search<R: StepRunner>(plan: &Plan, runner: &mut R) -> Result<Peak, R::Error> {
    let closed_loop = plan.closed_loop;
    let limits = &plan.limits;
    let mut file = Peak {
        format: PEAK_FORMAT.into(),
        version: PEAK_VERSION,
        workload: plan.workload.clone(),
        closed_loop,
        peak_rate_xps: None,
        peak_robots: None,
        outcome: "searching".into(),
        precision: plan.precision,
        limit: Limit {
            text: limits.to_string(),
            rt_stat: limits.rt.stat.name().into(),
            rt_ms: limits.rt.ms,
            error_pct: limits.error_pct,
        },
        warmup_dir: plan.warmed.then(|| "warmup".into()),
        steps: Vec::new(),
    };
    runner.record(&file)?;
    let cfg = SearchConfig {
        precision: plan.precision,
        max: plan.max_load,
        max_steps: plan.max_steps,
        whole: closed_loop,
        ..SearchConfig::new(plan.start)
    };
    let mut n = 0;
    let outcome = find(&cfg, limits, |load, role| {
        if let Some(e) = runner.stopped() {
            return Err(e);
        }
        if n > 0 || plan.warmed {
            runner.rest();
        }
        n += 1;
        let name = step_name(n, load, closed_loop);
        let f = runner.step(&name, load)?;
        let pass = limits.judge(&f);
        file.steps.push(PeakStep {
            rate_xps: if closed_loop { f.rate_xps } else { load },
            robots: closed_loop.then_some(load as u32),
            throughput_xps: f.rate_xps,
            rt_ms_mean: f.rt_ms_mean,
            rt_ms_p99: f.rt_ms_p99,
            error_pct: f.error_pct,
            pass,
            confirm: role == Role::Confirm,
            recheck: role == Role::Recheck,
            dir: name,
        });
        runner.record(&file)?;
        runner.say(&step_line(n, load, closed_loop, role, &f, pass));
        Ok(f)
    })?;
    conclude(&mut file, &outcome, closed_loop);
    runner.record(&file)?;
    Ok(file)
}

/// The figures of a step's measured phase (the whole run without one).
pub fn figures(s: &Summary) -> Figures {
    let e = s
        .measured_phase
        .as_ref()
        .and_then(|m| s.phases.iter().find(|p| &p.name == m))
        .unwrap_or(&s.total);
    Figures {
        rate_xps: e.rate_xps,
        xacts: e.xacts,
        rt_ms_mean: e.rt_ms.all.mean,
        rt_ms_p99: e.rt_ms.all.p99,
        error_pct: e.errors.percent,
    }
}

/// A step's directory name: `step-03-262.5xps`, `step-04-8robots`.
fn step_name(n: usize, load: f64, closed_loop: bool) -> String {
    if closed_loop {
        format!("step-{n:02}-{load}robots")
    } else {
        format!("step-{n:02}-{load}xps")
    }
}

/// The search's result into the record.
fn conclude(file: &mut Peak, outcome: &Outcome, closed_loop: bool) {
    file.outcome = outcome.stop.name().into();
    file.peak_rate_xps = match (outcome.peak, outcome.peak_figures) {
        (Some(_), Some(f)) if closed_loop => Some(f.rate_xps),
        (Some(load), _) => Some(load),
        _ => None,
    };
    file.peak_robots = outcome.peak.filter(|_| closed_loop).map(|l| l as u32);
}

fn step_line(n: usize, load: f64, closed: bool, role: Role, f: &Figures, pass: bool) -> String {
    format!(
        "step {n:2}{} {:>10}: {:8.1} xact/s, rt mean {:7.1} ms, p99 {:7.1} ms, errors {:5.2}%  {}",
        match role {
            Role::Probe => "",
            Role::Confirm => " (repeat)",
            Role::Recheck => " (recheck)",
        },
        if closed {
            format!("{load} robots")
        } else {
            format!("{load}/s")
        },
        f.rate_xps,
        f.rt_ms_mean,
        f.rt_ms_p99,
        f.error_pct,
        if pass { "pass" } else { "FAIL" }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Stop;

    #[test]
    fn steps_are_named_by_their_load() {
        assert_eq!(step_name(3, 262.5, false), "step-03-262.5xps");
        assert_eq!(step_name(12, 8.0, true), "step-12-8robots");
    }

    /// A proxy of capacity `capacity`: response time grows without bound
    /// above it. Counts what the search asked of it.
    struct Model {
        capacity: f64,
        steps: Vec<String>,
        records: Vec<Peak>,
        rests: usize,
        lines: Vec<String>,
        stop_after: Option<usize>,
    }

    impl Model {
        fn new(capacity: f64) -> Model {
            Model {
                capacity,
                steps: Vec::new(),
                records: Vec::new(),
                rests: 0,
                lines: Vec::new(),
                stop_after: None,
            }
        }
    }

    impl StepRunner for Model {
        type Error = String;
        fn step(&mut self, name: &str, load: f64) -> Result<Figures, String> {
            self.steps.push(name.to_string());
            let rt = if load <= self.capacity { 10.0 } else { 900.0 };
            Ok(Figures {
                rate_xps: load.min(self.capacity),
                xacts: 1000,
                rt_ms_mean: rt,
                rt_ms_p99: rt,
                error_pct: 0.0,
            })
        }
        fn record(&mut self, peak: &Peak) -> Result<(), String> {
            self.records.push(peak.clone());
            Ok(())
        }
        fn say(&mut self, line: &str) {
            self.lines.push(line.to_string());
        }
        fn rest(&mut self) {
            self.rests += 1;
        }
        fn stopped(&mut self) -> Option<String> {
            (Some(self.steps.len()) == self.stop_after).then(|| "interrupted".to_string())
        }
    }

    fn plan(warmed: bool) -> Plan {
        Plan {
            workload: "steady".into(),
            closed_loop: false,
            start: 40.0,
            limits: Limits::parse("p99<=250ms", None).unwrap(),
            precision: 0.05,
            max_load: 100_000.0,
            max_steps: 16,
            warmed,
        }
    }

    #[test]
    fn every_step_is_run_judged_said_and_recorded_and_the_peak_is_the_capacity_s() {
        let mut m = Model::new(100.0);
        let p = search(&plan(false), &mut m).unwrap();
        assert_eq!(p.outcome, Stop::Found.name());
        let peak = p.peak_rate_xps.unwrap();
        assert!((95.0..=100.0).contains(&peak), "{peak}");
        assert_eq!(p.warmup_dir, None);
        // One record before the first step, one per step, one at the end.
        assert_eq!(m.records.len(), m.steps.len() + 2);
        assert_eq!(m.records.first().unwrap().outcome, "searching");
        assert_eq!(m.records.last(), Some(&p));
        assert_eq!(m.lines.len(), m.steps.len());
        // No pause before the first step: nothing ran before it.
        assert_eq!(m.rests, m.steps.len() - 1);
        let dirs: Vec<&str> = p.steps.iter().map(|s| s.dir.as_str()).collect();
        assert_eq!(dirs, m.steps);
        assert_eq!(dirs[0], "step-01-40xps");
        for s in &p.steps {
            assert_eq!(s.pass, s.rate_xps <= 100.0, "{s:?}");
        }
        assert!(p.steps.last().unwrap().confirm, "the peak is repeated");
        assert!(m.lines.iter().any(|l| l.contains("(repeat)")));
    }

    #[test]
    fn a_warm_up_is_recorded_and_rested_after_and_an_interruption_ends_the_search() {
        let mut m = Model::new(100.0);
        m.stop_after = Some(2);
        let e = search(&plan(true), &mut m).unwrap_err();
        assert_eq!(e, "interrupted");
        assert_eq!(m.steps.len(), 2);
        assert_eq!(m.rests, 2, "after the warm-up too");
        let last = m.records.last().unwrap();
        assert_eq!(last.warmup_dir.as_deref(), Some("warmup"));
        assert_eq!(last.steps.len(), 2, "each step recorded as it ended");
        assert_eq!(last.outcome, "searching");
    }
}
