//! Seeded random streams and stateless id hashing.
//!
//! Every random choice in a run comes either from a stream seeded by
//! `(run seed, stream id)` or from hashing an id, so runs are reproducible.

use rand::SeedableRng;
pub use rand::{Rng, RngCore};
use rand_xoshiro::Xoshiro256PlusPlus;

/// The generator used for all simulation streams.
pub type SimRng = Xoshiro256PlusPlus;

/// SplitMix64 finalizer: a bijective, well-mixing hash of a 64-bit value.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Hash of a (key, id) pair, e.g. (object-property seed, object id).
#[inline]
pub fn mix2(key: u64, id: u64) -> u64 {
    mix64(key ^ mix64(id))
}

/// Maps a hash to a uniform float in [0, 1).
#[inline]
pub fn unit_f64(h: u64) -> f64 {
    (h >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Stream ids: one namespace so that no two consumers share a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// A robot's arrival times (and the thinning of them by load).
    Robot(u32),
    /// A robot's choices: objects, request types, POST bodies.
    Choices(u32),
    /// A robot's connection reuse limits.
    Conns(u32),
    /// An origin server's think times and connection limits.
    Server(u32),
    /// Object properties (hashed with the object id, not a stream).
    Objects,
    /// Abort decisions (hashed with the transaction id).
    Aborts,
    /// A galaxy's order of visiting servers during the warm-up.
    Galaxy(u32),
    /// Draws of a server by a worker other than its own, when workers
    /// share servers.
    ServerShare { server: u32, worker: u32 },
}

impl Stream {
    fn id(self) -> u64 {
        match self {
            Stream::Robot(i) => (1 << 40) | u64::from(i),
            Stream::Server(i) => (2 << 40) | u64::from(i),
            Stream::Objects => 3 << 40,
            Stream::Aborts => 4 << 40,
            Stream::Choices(i) => (5 << 40) | u64::from(i),
            Stream::Conns(i) => (6 << 40) | u64::from(i),
            Stream::Galaxy(i) => (7 << 40) | u64::from(i),
            Stream::ServerShare { server, worker } => {
                (8 << 40) | (u64::from(worker) << 32) | u64::from(server)
            }
        }
    }
}

/// A key derived from the run seed for one purpose.
pub fn key(seed: u64, stream: Stream) -> u64 {
    mix2(seed, stream.id())
}

/// A random stream started from `seed` itself (e.g. one a plan carries).
pub fn seeded(seed: u64) -> SimRng {
    SimRng::seed_from_u64(seed)
}

/// A random stream derived from the run seed.
pub fn stream(seed: u64, s: Stream) -> SimRng {
    SimRng::seed_from_u64(key(seed, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| 0).collect();
        let mut r1 = stream(7, Stream::Robot(1));
        let mut r2 = stream(7, Stream::Robot(1));
        let mut r3 = stream(7, Stream::Robot(2));
        let x1: Vec<u64> = a.iter().map(|_| r1.next_u64()).collect();
        let x2: Vec<u64> = a.iter().map(|_| r2.next_u64()).collect();
        let x3: Vec<u64> = a.iter().map(|_| r3.next_u64()).collect();
        assert_eq!(x1, x2);
        assert_ne!(x1, x3);
    }

    #[test]
    fn unit_f64_is_in_range_and_roughly_uniform() {
        let n = 100_000;
        let mut sum = 0.0;
        for i in 0..n {
            let u = unit_f64(mix64(i));
            assert!((0.0..1.0).contains(&u));
            sum += u;
        }
        let mean = sum / n as f64;
        assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
    }
}
