//! Storage and rules of the reference caching proxy; no I/O runtime.
//!
//! - [`control`]: `Cache-Control`/`Pragma` directives.
//! - [`freshness`]: RFC 9111 storability, lifetimes, ages ([`Freshness`]),
//!   every function taking `now`.
//! - [`policy`]: eviction, [`S3Fifo`](policy::S3Fifo) and
//!   [`Lru`](policy::Lru) behind the [`Eviction`] trait.
//! - [`Object`]: a stored reply; [`MemStore`] keeps objects in memory,
//!   [`DiskStore`] in files that survive `kill -9`.
//! - [`Cache`]: the memory store sharded behind locks, over an optional
//!   disk store.

pub mod control;
mod disk;
pub mod freshness;
mod memory;
mod object;
pub mod policy;

pub use control::Directives;
pub use disk::{DiskError, DiskStore, OpenReport};
pub use freshness::Freshness;
pub use memory::MemStore;
pub use object::{key_of, Object, Timing};
pub use policy::{Eviction, Policy};

use std::sync::{Arc, Mutex};

const SHARDS: usize = 16;

/// The memory store in shards (by key) over an optional disk store.
///
/// Locking: each shard has its own mutex, held only for map and policy
/// updates, never across I/O. Disk calls block; async callers run them on
/// a blocking thread.
pub struct Cache {
    shards: Vec<Mutex<MemStore>>,
    disk: Option<DiskStore>,
}

impl Cache {
    pub fn new(memory: u64, policy: Policy, disk: Option<DiskStore>) -> Cache {
        Cache {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(MemStore::new(memory / SHARDS as u64, policy)))
                .collect(),
            disk,
        }
    }

    fn shard(&self, key: u64) -> &Mutex<MemStore> {
        &self.shards[(key % SHARDS as u64) as usize]
    }

    pub fn has_disk(&self) -> bool {
        self.disk.is_some()
    }

    /// The object in memory for `url`.
    pub fn get_memory(&self, url: &str) -> Option<Arc<Object>> {
        let key = key_of(url);
        self.shard(key).lock().expect("shard lock").get(key, url)
    }

    /// The object on disk for `url`, brought into memory. Blocking.
    pub fn get_disk(&self, url: &str) -> Option<Arc<Object>> {
        let key = key_of(url);
        let o = Arc::new(self.disk.as_ref()?.get(key, url)?);
        self.shard(key)
            .lock()
            .expect("shard lock")
            .insert(o.clone());
        Some(o)
    }

    /// Stores an object in memory (the disk copy is [`Cache::put_disk`]).
    pub fn put_memory(&self, object: Arc<Object>) {
        let key = object.key();
        self.shard(key).lock().expect("shard lock").insert(object);
    }

    /// Writes an object to disk, if there is a disk store. Blocking.
    pub fn put_disk(&self, object: &Object) -> std::io::Result<()> {
        match &self.disk {
            Some(d) => d.put(object),
            None => Ok(()),
        }
    }

    /// Drops every copy of `url`. Blocking when there is a disk store.
    pub fn remove(&self, url: &str) {
        let key = key_of(url);
        self.shard(key).lock().expect("shard lock").remove(key);
        if let Some(d) = &self.disk {
            d.remove(key);
        }
    }

    /// Objects and bytes in memory.
    pub fn memory_usage(&self) -> (usize, u64) {
        self.shards.iter().fold((0, 0), |(n, b), s| {
            let s = s.lock().expect("shard lock");
            (n + s.len(), b + s.bytes())
        })
    }

    pub fn disk(&self) -> Option<&DiskStore> {
        self.disk.as_ref()
    }
}
