//! A [`Snapshot`] as it travels between hosts: every counter as a number
//! and every histogram in HdrHistogram's own compressed serialization
//! (V2 + DEFLATE, base64 in JSON), so the receiver adds histograms
//! exactly, never averages percentiles.

use crate::counters::Counters;
use crate::firsts::Firsts;
use crate::snapshot::{RtHists, Snapshot};
use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Histograms a snapshot carries on the wire, in the order of `hists`.
const HISTS: usize = 10;

/// The wire form of a [`Snapshot`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireSnapshot {
    /// [`Counters::to_numbers`].
    pub counters: Vec<u64>,
    /// rt all/hit/miss, rt_polygraph all/hit/miss, send lag, sizes.
    pub hists: Vec<String>,
    #[serde(default)]
    pub firsts: Firsts,
}

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("the counters are not this version's ({0} numbers)")]
    Counters(usize),
    #[error("expected 8 histograms, got {0}")]
    HistCount(usize),
    #[error("histogram {index}: {reason}")]
    Hist { index: usize, reason: String },
}

impl Snapshot {
    pub fn to_wire(&self) -> WireSnapshot {
        let mut ser = V2DeflateSerializer::new();
        let hists = self
            .hists()
            .iter()
            .map(|h| {
                let mut buf = Vec::new();
                // Writing to a Vec only fails on a histogram too large to
                // encode, which fixed bounds rule out.
                ser.serialize(h, &mut buf)
                    .expect("histogram with static bounds serializes");
                base64::engine::general_purpose::STANDARD.encode(buf)
            })
            .collect();
        WireSnapshot {
            counters: self.counters.to_numbers(),
            hists,
            firsts: self.firsts,
        }
    }

    pub fn from_wire(w: &WireSnapshot) -> Result<Snapshot, WireError> {
        let counters =
            Counters::from_numbers(&w.counters).ok_or(WireError::Counters(w.counters.len()))?;
        if w.hists.len() != HISTS {
            return Err(WireError::HistCount(w.hists.len()));
        }
        let mut snap = Snapshot {
            counters,
            firsts: w.firsts,
            ..Snapshot::default()
        };
        let mut de = Deserializer::new();
        for (index, (text, into)) in w.hists.iter().zip(snap.hists_mut()).enumerate() {
            let bad = |reason: String| WireError::Hist { index, reason };
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|e| bad(e.to_string()))?;
            let h: Histogram<u64> = de
                .deserialize(&mut bytes.as_slice())
                .map_err(|e| bad(format!("{e:?}")))?;
            // Into our own bounds: a sender's wider range is refused, not
            // silently clipped.
            into.add(&h).map_err(|e| bad(format!("{e:?}")))?;
        }
        Ok(snap)
    }

    fn hists(&self) -> [&Histogram<u64>; HISTS] {
        let RtHists { all, hit, miss } = &self.rt;
        let p = &self.rt_polygraph;
        [
            all,
            hit,
            miss,
            &p.all,
            &p.hit,
            &p.miss,
            &self.send_lag,
            &self.sizes,
            &self.tls_handshake,
            &self.tunnel,
        ]
    }

    fn hists_mut(&mut self) -> [&mut Histogram<u64>; HISTS] {
        let RtHists { all, hit, miss } = &mut self.rt;
        let p = &mut self.rt_polygraph;
        [
            all,
            hit,
            miss,
            &mut p.all,
            &mut p.hit,
            &mut p.miss,
            &mut self.send_lag,
            &mut self.sizes,
            &mut self.tls_handshake,
            &mut self.tunnel,
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{ErrorKind, Outcome};
    use crate::snapshot::XactRecord;
    use cacheoff_base::RequestType;

    fn busy_snapshot(seed: u64) -> Snapshot {
        let mut s = Snapshot::default();
        for i in 0..500u64 {
            let x = (i * 7919 + seed * 104_729) % 100_000;
            s.record_xact(&XactRecord {
                outcome: if x.is_multiple_of(3) {
                    Outcome::Hit
                } else {
                    Outcome::Miss
                },
                fills_cache: x.is_multiple_of(2),
                bytes: x,
                full_body: !x.is_multiple_of(5),
                rtype: RequestType::Basic,
                ctype: (x % 20) as u16,
                offered_hit: x.is_multiple_of(4),
                ideal_hit: x.is_multiple_of(8),
                rt_corrected_us: x * 13,
                rt_polygraph_us: x * 11,
            });
            s.record_send(x % 20_000);
        }
        s.record_error(ErrorKind::Unfinished);
        s.counters.conns_open = 9;
        s.firsts.record(Outcome::Hit, 1.25);
        s
    }

    fn same(a: &Snapshot, b: &Snapshot) {
        assert_eq!(a.counters.to_numbers(), b.counters.to_numbers());
        assert_eq!(a.firsts, b.firsts);
        for (x, y) in a.hists().iter().zip(b.hists()) {
            assert_eq!(x.len(), y.len());
            assert!(x.iter_recorded().eq(y.iter_recorded()));
        }
    }

    #[test]
    fn a_snapshot_survives_the_wire_through_json() {
        let s = busy_snapshot(1);
        let text = serde_json::to_string(&s.to_wire()).unwrap();
        let back = Snapshot::from_wire(&serde_json::from_str(&text).unwrap()).unwrap();
        same(&s, &back);
        assert_eq!(back.errors_total(), 1);
        assert!(back.rt.all.value_at_quantile(0.99) > 0);
    }

    #[test]
    fn merging_after_the_wire_equals_merging_before_it() {
        let (a, b) = (busy_snapshot(2), busy_snapshot(3));
        let mut here = a.clone();
        here.add(&b);
        let mut there = Snapshot::from_wire(&a.to_wire()).unwrap();
        there.add(&Snapshot::from_wire(&b.to_wire()).unwrap());
        same(&here, &there);
        assert_eq!(
            here.rt.all.value_at_quantile(0.99),
            there.rt.all.value_at_quantile(0.99)
        );
    }

    #[test]
    fn another_versions_counters_or_broken_histograms_are_refused() {
        let mut w = busy_snapshot(4).to_wire();
        w.counters.push(1);
        assert!(matches!(
            Snapshot::from_wire(&w),
            Err(WireError::Counters(_))
        ));
        let mut w = busy_snapshot(4).to_wire();
        w.hists[2] = "bm90IGEgaGlzdG9ncmFt".into();
        assert!(matches!(
            Snapshot::from_wire(&w),
            Err(WireError::Hist { index: 2, .. })
        ));
        let mut w = busy_snapshot(4).to_wire();
        w.hists.pop();
        assert!(matches!(
            Snapshot::from_wire(&w),
            Err(WireError::HistCount(n)) if n == HISTS - 1
        ));
    }
}
