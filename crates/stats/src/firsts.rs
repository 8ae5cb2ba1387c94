//! When a span first saw a hit, a miss and a new connection: the downtime
//! test's TTFM, TTFH and time to first connection come from these, to the
//! millisecond rather than to the 5-second interval.

use crate::kinds::Outcome;
use serde::{Deserialize, Serialize};

/// Earliest moments in a span, in seconds from the run's start (`None`:
/// none happened). Spans combine by taking the earlier of each.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Firsts {
    /// A successful hit's reply was complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hit_s: Option<f64>,
    /// A successful miss's reply was complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub miss_s: Option<f64>,
    /// A robot's connection was accepted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conn_s: Option<f64>,
}

impl Firsts {
    pub fn is_empty(&self) -> bool {
        *self == Firsts::default()
    }

    pub fn record(&mut self, outcome: Outcome, at_s: f64) {
        let slot = match outcome {
            Outcome::Hit => &mut self.hit_s,
            Outcome::Miss => &mut self.miss_s,
        };
        earliest(slot, Some(at_s));
    }

    pub fn record_conn(&mut self, at_s: f64) {
        earliest(&mut self.conn_s, Some(at_s));
    }

    pub fn add(&mut self, o: &Firsts) {
        earliest(&mut self.hit_s, o.hit_s);
        earliest(&mut self.miss_s, o.miss_s);
        earliest(&mut self.conn_s, o.conn_s);
    }
}

fn earliest(slot: &mut Option<f64>, t: Option<f64>) {
    if let Some(t) = t {
        *slot = Some(slot.map_or(t, |s| s.min(t)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_keep_the_earliest_of_each() {
        let mut a = Firsts::default();
        a.record(Outcome::Miss, 3.5);
        a.record(Outcome::Miss, 2.25);
        a.record_conn(2.0);
        let mut b = Firsts::default();
        b.record(Outcome::Hit, 4.0);
        b.record(Outcome::Miss, 2.5);
        a.add(&b);
        assert_eq!(
            a,
            Firsts {
                hit_s: Some(4.0),
                miss_s: Some(2.25),
                conn_s: Some(2.0)
            }
        );
        assert!(Firsts::default().is_empty());
    }
}
