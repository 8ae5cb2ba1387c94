//! How a workload's phases are cut for the peak finder: the phases that
//! warm the cache run once, and every step runs the measured plateau
//! alone.
//!
//! - The step is the workload's last measured phase (the one a run's
//!   headline figures come from), at full load and population, measured,
//!   with no goal: a plateau at the step's rate as long as that phase
//!   (after `--plateau` and `--duration`).
//! - The warm-up is the phases before it, up to and including the last
//!   one with a fill goal (PolyMix: `framp`, `fill`; the ramps, `top1`
//!   and `idle` after the fill are left out), or all of them when none
//!   has a goal (`simple`: `warm`); none of them measured.

use cacheoff_workload::{Load, Workload};

/// A workload with no measured phase has no plateau to step.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("workload {0:?} has no measured phase to step the load on")]
pub struct NoPlateau(pub String);

/// The warm-up (if the workload has phases before its plateau) and one
/// step's workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Cut {
    pub warmup: Option<Workload>,
    pub step: Workload,
}

/// Cuts `w` (see the module's rule).
pub fn cut(w: &Workload) -> Result<Cut, NoPlateau> {
    let m = (0..w.phases.len())
        .rev()
        .find(|&i| w.phases[i].measured)
        .ok_or_else(|| NoPlateau(w.name.clone()))?;
    let before = &w.phases[..m];
    let end = before
        .iter()
        .rposition(|p| p.goal.is_some())
        .map_or(before.len(), |g| g + 1);
    let warmup = (end > 0).then(|| {
        let mut warm = w.clone();
        warm.phases = before[..end].to_vec();
        for p in &mut warm.phases {
            p.measured = false;
        }
        warm
    });
    let mut plateau = w.phases[m].clone();
    plateau.goal = None;
    plateau.measured = true;
    plateau.load_begin = Load::Factor(1.0);
    plateau.load_end = Load::Factor(1.0);
    plateau.population_begin = Load::Factor(1.0);
    plateau.population_end = Load::Factor(1.0);
    plateau.dark = false;
    let mut step = w.clone();
    step.phases = vec![plateau];
    Ok(Cut { warmup, step })
}

#[cfg(test)]
mod tests {
    use super::*;
    use cacheoff_workload::{load, Overrides};

    fn names(w: &Workload) -> Vec<&str> {
        w.phases.iter().map(|p| p.name.as_str()).collect()
    }

    #[test]
    fn simple_warms_then_steps_its_measured_phase() {
        let w = load("simple", &Overrides::default()).unwrap();
        let c = cut(&w).unwrap();
        let warm = c.warmup.unwrap();
        assert_eq!(names(&warm), ["warm"]);
        assert!(warm.phases.iter().all(|p| !p.measured));
        assert_eq!(names(&c.step), ["meas"]);
        assert!(c.step.phases[0].measured);
        assert_eq!(c.step.phases[0].duration, w.phases[1].duration);
    }

    #[test]
    fn polymix_warms_through_its_fill_and_steps_top2() {
        let o = Overrides {
            cache_size: Some(cacheoff_base::Bytes(64 << 20)),
            ..Default::default()
        };
        let w = load("polymix-4", &o).unwrap();
        let c = cut(&w).unwrap();
        assert_eq!(names(&c.warmup.unwrap()), ["framp", "fill"]);
        assert_eq!(names(&c.step), ["top2"]);
        let p = &c.step.phases[0];
        assert_eq!(
            (p.load_begin, p.population_end),
            (Load::Factor(1.0), Load::Factor(1.0))
        );
        assert!(p.goal.is_none());
    }

    #[test]
    fn a_workload_without_a_measured_phase_is_refused() {
        let mut w = load("simple", &Overrides::default()).unwrap();
        for p in &mut w.phases {
            p.measured = false;
        }
        assert_eq!(
            cut(&w).unwrap_err().to_string(),
            "workload \"simple\" has no measured phase to step the load on"
        );
        // With only the plateau, there is nothing to warm.
        let mut w = load("simple", &Overrides::default()).unwrap();
        w.phases.remove(0);
        assert_eq!(cut(&w).unwrap().warmup, None);
    }
}
