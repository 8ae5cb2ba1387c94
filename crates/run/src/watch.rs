//! What the product under test spends, sampled once per interval: a
//! product cacheoff started (its cgroup), the reference proxy embedded in
//! this process (its threads) or one named by `--watch PID|CGROUP-PATH`.
//! The figures and their sources: docs/resources.md.

use crate::RunError;
use cacheoff_resources::{IntervalUsage, Sample, Sampler, Target};

pub struct Watch {
    sampler: Sampler,
    last: Sample,
}

impl Watch {
    pub fn new(target: Target) -> Watch {
        let mut sampler = Sampler::new(target);
        let last = sampler.sample();
        Watch { sampler, last }
    }

    /// `--watch PID|CGROUP-PATH`.
    pub fn parse(arg: &str) -> Result<Watch, RunError> {
        Target::parse(arg)
            .map(Watch::new)
            .map_err(|error| RunError::Watch {
                arg: arg.to_string(),
                error,
            })
    }

    /// What a run watches: `--watch` when given, else the reference proxy
    /// when it is embedded in this process, else nothing.
    pub fn for_run(arg: Option<&str>, embedded: bool) -> Result<Option<Watch>, RunError> {
        match arg {
            Some(a) => Watch::parse(a).map(Some),
            None => Ok(embedded.then(Watch::embedded_proxy)),
        }
    }

    /// The reference proxy embedded in this process: its threads (CPU and
    /// disk are its own; memory and fds the whole process's).
    pub fn embedded_proxy() -> Watch {
        Watch::new(Target::Threads {
            pid: std::process::id() as i32,
            prefix: cacheoff_proxy::THREAD_PREFIX.into(),
        })
    }

    /// What is watched and where each figure comes from, for the manifest.
    pub fn describe(&self) -> String {
        format!(
            "{} ({})",
            self.sampler.target().describe(),
            self.sampler.sources()
        )
    }

    /// The run's time zero: spending before it is not the run's.
    pub fn restart(&mut self) {
        self.last = self.sampler.sample();
    }

    /// What was spent since the last call.
    pub fn interval(&mut self) -> IntervalUsage {
        let now = self.sampler.sample();
        let usage = IntervalUsage::between(&self.last, &now);
        self.last = now;
        usage
    }
}
