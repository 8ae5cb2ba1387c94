//! Folding a killed run's intervals: the figures come from
//! [`Entry::fold`], which derives them as a summary's are derived.

use cacheoff_rundir::IntervalRecord;
use cacheoff_stats::Entry;

pub fn fold(name: &str, recs: &[&IntervalRecord]) -> Entry {
    Entry::fold(name, &recs.iter().map(|r| &r.stats).collect::<Vec<_>>())
}
