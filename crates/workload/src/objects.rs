//! The object universe: every property of an object follows from its id.

use crate::lifecycle::ObjectTimes;
use crate::model::Content;
use cacheoff_base::rng::{key, mix2, unit_f64, Stream};

/// What robots and servers both know about one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectInfo {
    pub oid: u64,
    /// Body length in bytes.
    pub size: u64,
    /// Answered with `Cache-Control: public` (else `private,no-cache`).
    pub cachable: bool,
    /// Index of the origin server that owns the object.
    pub server: u32,
    /// Seed of the body bytes (see `cacheoff_http::body`).
    pub body_seed: u64,
    /// Seed of the life cycle (see [`ObjectSpace::times`]).
    pub life_seed: u64,
}

/// Object ids are `world << WORLD_SHIFT | sequence`: each robot-side worker
/// creates objects in its own world.
pub const WORLD_SHIFT: u32 = 40;

/// Maps object ids to [`ObjectInfo`]; cheap to copy and share read-only.
///
/// Servers are split into `partitions` groups (server `i` is in group
/// `i mod partitions`); an object of world `w` lives on a server of group
/// `w mod partitions`. With one partition per worker, a worker's robots
/// only talk to its own servers in a direct run, which keeps traffic off
/// other cores.
#[derive(Debug, Clone)]
pub struct ObjectSpace {
    key: u64,
    content: Content,
    servers: u32,
    partitions: u32,
}

impl ObjectSpace {
    pub fn new(seed: u64, content: &Content, servers: u32) -> ObjectSpace {
        ObjectSpace::partitioned(seed, content, servers, 1)
    }

    /// As [`new`](Self::new) with servers split into `partitions` groups
    /// (at most one per server).
    pub fn partitioned(seed: u64, content: &Content, servers: u32, partitions: u32) -> ObjectSpace {
        let servers = servers.max(1);
        ObjectSpace {
            key: key(seed, Stream::Objects),
            content: content.clone(),
            servers,
            partitions: partitions.clamp(1, servers),
        }
    }

    fn server_of(&self, oid: u64, h: u64) -> u32 {
        let part = ((oid >> WORLD_SHIFT) % u64::from(self.partitions)) as u32;
        // Servers part, part + partitions, part + 2 * partitions, ...
        let in_part = (self.servers - part).div_ceil(self.partitions);
        part + self.partitions * (h % u64::from(in_part)) as u32
    }

    pub fn get(&self, oid: u64) -> ObjectInfo {
        // Independent hashes per property so they are uncorrelated.
        let h = |salt: u64| mix2(self.key ^ salt, oid);
        ObjectInfo {
            oid,
            size: self.content.size.sample_hashed(h(1)).round() as u64,
            cachable: unit_f64(h(2)) < self.content.cachable,
            server: self.server_of(oid, h(3)),
            body_seed: h(4),
            life_seed: h(5),
        }
    }

    /// The object's `Last-Modified` and `Expires` at `now` (Unix seconds)
    /// in a world that began at `epoch`.
    pub fn times(&self, o: &ObjectInfo, epoch: f64, now: f64) -> ObjectTimes {
        self.content.life_cycle.times(o.life_seed, epoch, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Dist, Quantity};

    #[test]
    fn properties_depend_on_id_only_and_match_shares() {
        let content = Content {
            size: Dist::exp(Quantity::Size, 13.0 * 1024.0),
            cachable: 0.8,
            life_cycle: crate::LifeCycle::static_two_years(),
        };
        let a = ObjectSpace::new(5, &content, 10);
        let b = ObjectSpace::new(5, &content, 10);
        let n = 100_000u64;
        let mut cachable = 0;
        let mut size = 0u64;
        let mut per_server = [0u32; 10];
        for oid in 0..n {
            let o = a.get(oid);
            assert_eq!(o, b.get(oid));
            cachable += u64::from(o.cachable);
            size += o.size;
            per_server[o.server as usize] += 1;
        }
        let share = cachable as f64 / n as f64;
        assert!((share - 0.8).abs() < 0.01, "cachable share {share}");
        let mean = size as f64 / n as f64;
        assert!(
            (mean / (13.0 * 1024.0) - 1.0).abs() < 0.02,
            "mean size {mean}"
        );
        assert!(per_server.iter().all(|&c| c > 9_000 && c < 11_000));
        // Partitioned: world w's objects stay on servers i with i % 3 == w % 3.
        let p = ObjectSpace::partitioned(5, &content, 10, 3);
        for world in 0..6u64 {
            for seq in 0..1000 {
                let o = p.get(world << WORLD_SHIFT | seq);
                assert_eq!(u64::from(o.server) % 3, world % 3);
                assert!(o.server < 10);
            }
        }
        // Another seed gives another universe.
        let c = ObjectSpace::new(6, &content, 10);
        assert!((0..100).any(|oid| c.get(oid) != a.get(oid)));
    }
}
