//! Storage and rules of the reference caching proxy; no I/O runtime.
//!
//! - [`control`]: `Cache-Control`/`Pragma` directives ([`Directives`]);
//!   [`targeted`]: `CDN-Cache-Control` and other targeted fields that
//!   replace them for a surrogate ([`Targeted`]).
//! - [`freshness`]: lifetimes and ages ([`Freshness`]), every function
//!   taking `now`; [`storage`]: whether a reply is stored and without
//!   which fields ([`Storage`]); [`reuse`]: whether a stored reply answers
//!   a request as is ([`Reuse`], [`OnError`]).
//! - [`vary`]: secondary keys ([`Variant`]); [`validators`]: entity tags
//!   and conditional requests; [`update`]: freshening with a 304, whose
//!   header fields [`merge`] folds into the stored ones.
//! - [`policy`]: eviction, [`S3Fifo`](policy::S3Fifo) and
//!   [`Lru`](policy::Lru) behind the [`Eviction`] trait.
//! - [`Object`]: a stored reply and its secondary key; [`MemStore`] keeps
//!   objects in memory, [`DiskStore`] in files that survive `kill -9`.
//! - [`Cache`]: the memory store sharded behind locks, over an optional
//!   disk store.

pub mod control;
mod disk;
pub mod freshness;
mod memory;
pub mod merge;
mod object;
pub mod policy;
pub mod reuse;
pub mod storage;
pub mod targeted;
pub mod update;
pub mod validators;
pub mod vary;

pub use control::Directives;
pub use disk::{DiskError, DiskStore, OpenReport};
pub use freshness::Freshness;
pub use memory::{MemStore, MAX_VARIANTS};
pub use object::{header_pairs, key_of, Object, Timing};
pub use policy::{Eviction, Policy};
pub use reuse::{on_origin_error, reuse, OnError, Reuse};
pub use storage::{storable_with, Refusal, Storage};
pub use targeted::Targeted;
pub use vary::Variant;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const SHARDS: usize = 16;
/// Removal counters, by key: more stripes than shards, so a removal rarely
/// drops another URL's disk write.
const STRIPES: usize = 1024;

/// The memory store in shards (by key) over an optional disk store.
///
/// Locking: each shard has its own mutex, held only for map and policy
/// updates, never across I/O. Disk calls block; async callers run them on
/// a blocking thread.
pub struct Cache {
    shards: Vec<Mutex<MemStore>>,
    disk: Option<DiskStore>,
    /// URLs the memory store evicted to stay within its budget.
    evictions: AtomicU64,
    /// Removals so far, by stripe of keys ([`Filed`]).
    removals: Vec<AtomicU64>,
}

/// When an object went into memory, as the removals of its URL's stripe:
/// its disk copy, written later on another thread, is dropped if its URL
/// was removed meanwhile (a POST must not be undone by the copy from
/// before it reaching the disk after it).
#[derive(Clone, Copy, Debug)]
pub struct Filed {
    stripe: usize,
    removals: u64,
}

impl Cache {
    pub fn new(memory: u64, policy: Policy, disk: Option<DiskStore>) -> Cache {
        Cache {
            shards: (0..SHARDS)
                .map(|_| Mutex::new(MemStore::new(memory / SHARDS as u64, policy)))
                .collect(),
            disk,
            evictions: AtomicU64::new(0),
            removals: (0..STRIPES).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    fn stripe(key: u64) -> usize {
        (key % STRIPES as u64) as usize
    }

    fn shard(&self, key: u64) -> &Mutex<MemStore> {
        &self.shards[(key % SHARDS as u64) as usize]
    }

    pub fn has_disk(&self) -> bool {
        self.disk.is_some()
    }

    /// The object in memory for `url` that a request without headers
    /// selects (any object without `Vary`).
    pub fn get_memory(&self, url: &str) -> Option<Arc<Object>> {
        let key = key_of(url);
        self.shard(key).lock().expect("shard lock").get(key, url)
    }

    /// The object in memory for `url` that a request with `request`
    /// headers selects (RFC 9111 §4.1). A URL without `Vary` costs one
    /// hash lookup and reads no header.
    pub fn get_memory_for<'a, R>(&self, url: &str, request: R) -> Option<Arc<Object>>
    where
        R: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
    {
        self.get_memory_keyed(key_of(url), url, request)
    }

    /// [`Cache::get_memory_for`] with the key the caller already has.
    pub fn get_memory_keyed<'a, R>(&self, key: u64, url: &str, request: R) -> Option<Arc<Object>>
    where
        R: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
    {
        debug_assert_eq!(key, key_of(url));
        self.shard(key)
            .lock()
            .expect("shard lock")
            .get_for(key, url, request)
    }

    /// Every object in memory for `url` (its variants, oldest first), to
    /// choose what a 304 freshens ([`update::select_for_update`]).
    pub fn variants_memory(&self, url: &str) -> Vec<Arc<Object>> {
        let key = key_of(url);
        self.shard(key)
            .lock()
            .expect("shard lock")
            .variants(key, url)
    }

    /// The object on disk for `url`, brought into memory. Blocking.
    pub fn get_disk(&self, url: &str) -> Option<Arc<Object>> {
        self.get_disk_for(url, std::iter::empty())
    }

    /// The object on disk for `url` that a request with `request` headers
    /// selects, brought into memory. Blocking.
    pub fn get_disk_for<'a, R>(&self, url: &str, request: R) -> Option<Arc<Object>>
    where
        R: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
    {
        let key = key_of(url);
        let o = Arc::new(self.disk.as_ref()?.get_for(key, url, request)?);
        let evicted = self
            .shard(key)
            .lock()
            .expect("shard lock")
            .insert(o.clone());
        self.count_evictions(evicted);
        Some(o)
    }

    /// Stores an object in memory (the disk copy is [`Cache::put_disk`]):
    /// without `Vary` it replaces every variant of its URL; with one, the
    /// variant with the same secondary key. Set the key first
    /// ([`Object::keyed_by`]): an object with `Vary` and no key is dropped.
    pub fn put_memory(&self, object: Arc<Object>) -> Filed {
        let key = object.key();
        let stripe = Cache::stripe(key);
        // Read under the shard lock that removals also take.
        let (evicted, removals) = {
            let mut shard = self.shard(key).lock().expect("shard lock");
            let removals = self.removals[stripe].load(Ordering::SeqCst);
            (shard.insert(object), removals)
        };
        self.count_evictions(evicted);
        Filed { stripe, removals }
    }

    fn count_evictions(&self, n: usize) {
        if n > 0 {
            self.evictions.fetch_add(n as u64, Ordering::Relaxed);
        }
    }

    /// URLs the memory store evicted so far.
    pub fn memory_evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    /// Writes an object to disk, if there is a disk store and its URL was
    /// not removed since it was `filed`. Blocking.
    pub fn put_disk(&self, object: &Object, filed: Filed) -> std::io::Result<()> {
        let Some(d) = &self.disk else { return Ok(()) };
        let removals = &self.removals[filed.stripe];
        d.put_if(object, || removals.load(Ordering::SeqCst) == filed.removals)
    }

    /// Drops every copy of `url`, all variants, and every disk write of
    /// it under way. Blocking when there is a disk store.
    pub fn remove(&self, url: &str) {
        let key = key_of(url);
        {
            let mut shard = self.shard(key).lock().expect("shard lock");
            self.removals[Cache::stripe(key)].fetch_add(1, Ordering::SeqCst);
            shard.remove(key);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;

    fn h<'a>(v: &'a [(&'a str, &'a str)]) -> impl Iterator<Item = (&'a str, &'a [u8])> + Clone {
        v.iter().map(|(n, v)| (*n, v.as_bytes()))
    }

    fn object(url: &str, head: &'static [u8], body: &'static [u8]) -> Object {
        Object {
            url: url.into(),
            status: 200,
            head: Bytes::from_static(head),
            body: Bytes::from_static(body),
            fresh: Freshness::of_reply([("Cache-Control", b"max-age=60".as_slice())], 0, 0),
            timing: None,
            vary: None,
        }
    }

    #[test]
    fn rfc9111_4_1_cache_lookups_by_url_and_request_headers() {
        let dir = tempfile::tempdir().unwrap();
        let (disk, _) = DiskStore::open(dir.path(), 1 << 20, Policy::S3Fifo).unwrap();
        let c = Cache::new(1 << 20, Policy::S3Fifo, Some(disk));
        let u = "http://o/x";
        // Without Vary: any request headers select it, old calls too.
        let plain = Arc::new(object(u, b"", b"plain"));
        c.put_memory(plain.clone());
        assert!(c.get_memory(u).is_some());
        assert!(c
            .get_memory_for(u, h(&[("Accept-Encoding", "gzip")]))
            .is_some());
        // Variants, on disk and in memory.
        let vary = b"Vary: Accept-Encoding\r\n";
        let gz = object(u, vary, b"gz").keyed_by(h(&[("Accept-Encoding", "gzip")]));
        let id = object(u, vary, b"id").keyed_by(h(&[]));
        for o in [&gz, &id] {
            let filed = c.put_memory(Arc::new(o.clone()));
            c.put_disk(o, filed).unwrap();
        }
        assert_eq!(c.variants_memory(u).len(), 2);
        assert_eq!(c.get_memory(u).unwrap().body, "id");
        assert!(c
            .get_memory_for(u, h(&[("Accept-Encoding", "br")]))
            .is_none());
        c.remove(u);
        assert!(c.variants_memory(u).is_empty() && c.disk().unwrap().is_empty());
        c.put_disk(&gz, filed_now(&c, u)).unwrap();
        assert!(c.get_disk_for(u, h(&[("Accept-Encoding", "br")])).is_none());
        let got = c
            .get_disk_for(u, h(&[("Accept-Encoding", "gzip")]))
            .unwrap();
        assert_eq!(got.body, "gz");
        assert_eq!(
            c.get_memory_for(u, h(&[("Accept-Encoding", "gzip")]))
                .unwrap()
                .body,
            "gz"
        );
        assert_eq!(c.memory_usage().0, 1);
    }

    #[test]
    fn rfc9111_4_4_a_disk_write_that_started_before_a_removal_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (disk, _) = DiskStore::open(dir.path(), 1 << 20, Policy::S3Fifo).unwrap();
        let c = Cache::new(1 << 20, Policy::S3Fifo, Some(disk));
        let (u, other) = ("http://o/post", "http://o/other");
        let before = Arc::new(object(u, b"", b"before the POST"));
        let filed = c.put_memory(before.clone());
        let unrelated = Arc::new(object(other, b"", b"x"));
        let unrelated_filed = c.put_memory(unrelated.clone());
        // The POST's removal overtakes the write on its way to the disk.
        c.remove(u);
        c.put_disk(&before, filed).unwrap();
        assert!(c.get_memory(u).is_none() && c.get_disk(u).is_none());
        let files = |d: &std::path::Path| walk(d).iter().filter(|p| p.is_file()).count();
        assert_eq!(files(dir.path()), 0, "nothing left behind");
        // Other URLs' writes, and this URL's later ones, go on.
        c.put_disk(&unrelated, unrelated_filed).unwrap();
        let after = Arc::new(object(u, b"", b"after"));
        let filed = c.put_memory(after.clone());
        c.put_disk(&after, filed).unwrap();
        assert_eq!(c.disk().unwrap().len(), 2);
        assert_eq!(c.disk().unwrap().get(key_of(u), u).unwrap().body, "after");
    }

    /// The stamp of a disk write with no memory store before it.
    fn filed_now(c: &Cache, url: &str) -> Filed {
        let stripe = Cache::stripe(key_of(url));
        Filed {
            stripe,
            removals: c.removals[stripe].load(Ordering::SeqCst),
        }
    }

    fn walk(d: &std::path::Path) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(d).map_or(Vec::new(), |rd| {
            rd.flatten()
                .flat_map(|e| {
                    let p = e.path();
                    let mut v = walk(&p);
                    v.push(p);
                    v
                })
                .collect()
        })
    }
}
