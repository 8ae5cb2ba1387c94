//! Run-unique ids.

use std::fmt;

/// A transaction id, unique within a run: the worker that sent it in the
/// top 16 bits, and that worker's count of transactions sent, in sending
/// order, below. Origin servers echo a transform of it (hit detection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct XactId(u64);

impl XactId {
    const SEQ_BITS: u32 = 48;
    const SEQ_MASK: u64 = (1 << Self::SEQ_BITS) - 1;

    /// The `seq`-th transaction (from 1) of `worker`.
    pub fn new(worker: u32, seq: u64) -> XactId {
        XactId(u64::from(worker) << Self::SEQ_BITS | (seq & Self::SEQ_MASK))
    }

    /// The id as it travels in a header.
    pub fn from_wire(v: u64) -> XactId {
        XactId(v)
    }

    pub fn get(self) -> u64 {
        self.0
    }

    pub fn worker(self) -> u32 {
        (self.0 >> Self::SEQ_BITS) as u32
    }

    /// Its place in the sending order of its worker.
    pub fn seq(self) -> u64 {
        self.0 & Self::SEQ_MASK
    }
}

impl fmt::Display for XactId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worker_and_sequence_round_trip() {
        let x = XactId::new(3, 41);
        assert_eq!((x.worker(), x.seq()), (3, 41));
        assert_eq!(XactId::from_wire(x.get()), x);
        assert!(XactId::new(3, 42) > x);
        assert_eq!(x.to_string(), "0003000000000029");
    }
}
