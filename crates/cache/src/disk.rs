//! The disk store: one file per object, safe against `kill -9`.
//!
//! An object is written to `tmp/` and renamed into `objects/` only when
//! complete, so a file under `objects/` is always a whole write; a killed
//! process leaves at most stray files in `tmp/`, removed at the next open.
//! Every file ends with a CRC-32 of everything before it and is checked on
//! every read: a damaged file is deleted and counts as a miss, never
//! served. The index (URL key -> its files, with their secondary keys)
//! lives in memory and is rebuilt from the files' meta when the store
//! opens.
//!
//! File layout: magic, meta length (u32 LE), head length (u32 LE), body
//! length (u64 LE), meta (JSON: url, status, freshness, timing, vary),
//! head, body, CRC-32 (u32 LE). A URL's object without `Vary` lives in
//! `objects/kk/<key>`, each of its variants in `objects/kk/<key>-<id>`.
//!
//! Format 2 (`COFOBJ2`) added the secondary key. Format-1 files are still
//! read, except those whose head has `Vary`: they were stored without the
//! request's values, so they are deleted at open. A kill between writing
//! a reply and deleting what it replaced can leave a URL with both a
//! plain file and variants, or too many variants: such a URL is dropped
//! at open.
//!
//! Locking: `index` guards the index and the policy only; file I/O happens
//! outside it. Callers run these blocking calls off their async threads.

use crate::freshness::Freshness;
use crate::memory::MAX_VARIANTS;
use crate::object::{header_pairs, Object, Timing};
use crate::policy::{Eviction, Policy};
use crate::vary::Variant;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::SystemTime;

const MAGIC: &[u8; 8] = b"COFOBJ2\0";
const MAGIC_V1: &[u8; 8] = b"COFOBJ1\0";
const FIXED: usize = 8 + 4 + 4 + 8;

#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    #[error("cache directory {dir}")]
    Io {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
}

#[derive(Serialize, Deserialize)]
struct Meta {
    url: String,
    status: u16,
    fresh: Freshness,
    timing: Option<Timing>,
    #[serde(default)]
    vary: Option<Variant>,
}

/// What opening a store found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct OpenReport {
    pub objects: usize,
    pub bytes: u64,
    /// Files that were not whole objects, or not usable (deleted).
    pub discarded: usize,
    /// Objects evicted because the store is now smaller.
    pub evicted: usize,
}

/// One file of a URL.
struct Entry {
    id: u64,
    size: u64,
    vary: Option<Variant>,
}

struct Index {
    /// URL key -> its files, oldest first.
    urls: HashMap<u64, Vec<Entry>>,
    /// File id -> URL key, for the policy's victims.
    owners: HashMap<u64, u64>,
    /// Over file ids.
    policy: Box<dyn Eviction>,
}

impl Index {
    /// Forgets the files of `key` that `drop` selects; returns their ids.
    fn drop_where(&mut self, key: u64, drop: impl Fn(&Entry) -> bool) -> Vec<u64> {
        let Some(entries) = self.urls.get_mut(&key) else {
            return Vec::new();
        };
        let mut gone = Vec::new();
        entries.retain(|e| {
            let d = drop(e);
            if d {
                gone.push(e.id);
            }
            !d
        });
        if entries.is_empty() {
            self.urls.remove(&key);
        }
        for id in &gone {
            self.policy.remove(*id);
            self.owners.remove(id);
        }
        gone
    }

    /// Forgets file `id` of `key` but leaves it to the policy, for a new
    /// file of the same id ([`Index::add`] with `replacing`).
    fn detach(&mut self, key: u64, id: u64) -> bool {
        let Some(entries) = self.urls.get_mut(&key) else {
            return false;
        };
        let before = entries.len();
        entries.retain(|e| e.id != id);
        let found = entries.len() < before;
        if entries.is_empty() {
            self.urls.remove(&key);
        }
        self.owners.remove(&id);
        found
    }

    /// Files an entry; `replacing`: it overwrote a detached file of the
    /// same id, whose place in the policy it keeps.
    fn add(&mut self, key: u64, entry: Entry, replacing: bool) {
        if replacing {
            self.policy.update(entry.id, entry.size);
        } else {
            self.policy.insert(entry.id, entry.size);
        }
        self.owners.insert(entry.id, key);
        self.urls.entry(key).or_default().push(entry);
    }
}

pub struct DiskStore {
    dir: PathBuf,
    capacity: u64,
    index: Mutex<Index>,
    tmp_seq: AtomicU64,
    /// Damaged files found on read.
    corrupt: AtomicU64,
    /// Files evicted to stay within the capacity since the store opened.
    evicted: AtomicU64,
}

/// The file id of a URL key's object: the key itself without a
/// secondary key (the file name format 1 used), else a hash of both.
fn file_id(key: u64, vary: Option<&Variant>) -> u64 {
    let Some(v) = vary else { return key };
    let mut h = std::hash::DefaultHasher::new();
    (key, v).hash(&mut h);
    let id = h.finish();
    if id == key {
        !id
    } else {
        id
    }
}

fn encode(o: &Object) -> Vec<u8> {
    let meta = serde_json::to_vec(&Meta {
        url: o.url.clone(),
        status: o.status,
        fresh: o.fresh,
        timing: o.timing,
        vary: o.vary.clone(),
    })
    .expect("meta serializes");
    frame(MAGIC, &meta, &o.head, &o.body)
}

/// A file's bytes: magic, the three lengths, the parts, then a CRC-32 of
/// everything before it.
fn frame(magic: &[u8], meta: &[u8], head: &[u8], body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(FIXED + meta.len() + head.len() + body.len() + 4);
    out.extend_from_slice(magic);
    out.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    out.extend_from_slice(&(head.len() as u32).to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(meta);
    out.extend_from_slice(head);
    out.extend_from_slice(body);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Lengths from a file's fixed header: (meta, head, body, whole file,
/// format 1).
fn lengths(fixed: &[u8]) -> Option<(usize, usize, usize, u64, bool)> {
    if fixed.len() < FIXED {
        return None;
    }
    let v1 = &fixed[..8] == MAGIC_V1;
    if !v1 && &fixed[..8] != MAGIC {
        return None;
    }
    let meta = u32::from_le_bytes(fixed[8..12].try_into().ok()?) as usize;
    let head = u32::from_le_bytes(fixed[12..16].try_into().ok()?) as usize;
    let body = u64::from_le_bytes(fixed[16..24].try_into().ok()?);
    let total = (FIXED + meta + head) as u64 + body + 4;
    Some((meta, head, usize::try_from(body).ok()?, total, v1))
}

fn decode(bytes: Vec<u8>) -> Option<Object> {
    let (m, h, b, total, _) = lengths(&bytes)?;
    if bytes.len() as u64 != total {
        return None;
    }
    let (data, crc) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(data) != u32::from_le_bytes(crc.try_into().ok()?) {
        return None;
    }
    let meta: Meta = serde_json::from_slice(&data[FIXED..FIXED + m]).ok()?;
    let bytes = Bytes::from(bytes);
    let head = bytes.slice(FIXED + m..FIXED + m + h);
    let body = bytes.slice(FIXED + m + h..FIXED + m + h + b);
    Some(Object {
        url: meta.url,
        status: meta.status,
        head,
        body,
        fresh: meta.fresh,
        timing: meta.timing,
        vary: meta.vary,
    })
}

/// Reads a file's meta without its body (for the index): the meta, the
/// file's size and age. None for a file not to keep.
fn read_meta(path: &Path) -> Option<(Meta, u64, SystemTime)> {
    let mut f = fs::File::open(path).ok()?;
    let md = f.metadata().ok()?;
    let mut fixed = [0u8; FIXED];
    f.read_exact(&mut fixed).ok()?;
    let (m, h, _, total, v1) = lengths(&fixed)?;
    if total != md.len() {
        return None;
    }
    let mut meta = vec![0u8; m];
    f.read_exact(&mut meta).ok()?;
    let meta: Meta = serde_json::from_slice(&meta).ok()?;
    if v1 {
        let mut head = vec![0u8; h];
        f.read_exact(&mut head).ok()?;
        if crate::vary::has_vary(header_pairs(&head)) {
            return None;
        }
    }
    Some((
        meta,
        md.len(),
        md.modified().unwrap_or(SystemTime::UNIX_EPOCH),
    ))
}

/// The URL key and file id a file name gives.
fn parse_name(path: &Path) -> Option<(u64, u64)> {
    let name = path.file_name()?.to_str()?;
    let (k, id) = match name.split_once('-') {
        Some((k, id)) => (k, Some(id)),
        None => (name, None),
    };
    let key = u64::from_str_radix(k, 16).ok()?;
    let id = match id {
        Some(id) => u64::from_str_radix(id, 16).ok().filter(|&i| i != key)?,
        None => key,
    };
    Some((key, id))
}

impl DiskStore {
    /// Opens (or creates) a store in `dir`, rebuilding the index from the
    /// files there.
    pub fn open(
        dir: &Path,
        capacity: u64,
        policy: Policy,
    ) -> Result<(DiskStore, OpenReport), DiskError> {
        let io_err = |source| DiskError::Io {
            dir: dir.to_path_buf(),
            source,
        };
        let tmp = dir.join("tmp");
        // Half-written objects of a killed process.
        if tmp.exists() {
            fs::remove_dir_all(&tmp).map_err(io_err)?;
        }
        fs::create_dir_all(&tmp).map_err(io_err)?;
        let objects = dir.join("objects");
        fs::create_dir_all(&objects).map_err(io_err)?;
        let mut report = OpenReport::default();
        let mut found: HashMap<u64, Vec<(SystemTime, Entry, PathBuf)>> = HashMap::new();
        for sub in fs::read_dir(&objects).map_err(io_err)? {
            let sub = sub.map_err(io_err)?.path();
            if !sub.is_dir() {
                continue;
            }
            for file in fs::read_dir(&sub).map_err(io_err)? {
                let path = file.map_err(io_err)?.path();
                match (read_meta(&path), parse_name(&path)) {
                    (Some((meta, size, mtime)), Some((k, id)))
                        if crate::key_of(&meta.url) == k
                            && file_id(k, meta.vary.as_ref()) == id =>
                    {
                        let vary = meta.vary;
                        found
                            .entry(k)
                            .or_default()
                            .push((mtime, Entry { id, size, vary }, path));
                    }
                    _ => {
                        let _ = fs::remove_file(&path);
                        report.discarded += 1;
                    }
                }
            }
        }
        let mut index = Index {
            urls: HashMap::new(),
            owners: HashMap::new(),
            policy: policy.build(capacity),
        };
        for (k, mut files) in found {
            let plain = files.iter().any(|(_, e, _)| e.vary.is_none());
            if files.len() > MAX_VARIANTS || (plain && files.len() > 1) {
                for (_, _, path) in &files {
                    let _ = fs::remove_file(path);
                }
                report.discarded += files.len();
                continue;
            }
            files.sort_by_key(|(t, _, _)| *t);
            for (_, e, _) in files {
                report.objects += 1;
                report.bytes += e.size;
                index.add(k, e, false);
            }
        }
        let store = DiskStore {
            dir: dir.to_path_buf(),
            capacity,
            index: Mutex::new(index),
            tmp_seq: AtomicU64::new(0),
            corrupt: AtomicU64::new(0),
            evicted: AtomicU64::new(0),
        };
        report.evicted = store.evict_to_capacity();
        Ok((store, report))
    }

    fn path(&self, key: u64, id: u64) -> PathBuf {
        let dir = self.dir.join("objects").join(format!("{:02x}", key >> 56));
        if id == key {
            dir.join(format!("{key:016x}"))
        } else {
            dir.join(format!("{key:016x}-{id:016x}"))
        }
    }

    /// Called with the index lock held, so a file is never removed after
    /// a later write put a new one in its place.
    fn remove_files(&self, key: u64, ids: &[u64]) {
        for id in ids {
            let _ = fs::remove_file(self.path(key, *id));
        }
    }

    fn evict_to_capacity(&self) -> usize {
        let mut evicted = 0;
        let mut ix = self.index.lock().expect("disk index lock");
        while ix.policy.bytes() > self.capacity {
            let Some(v) = ix.policy.evict() else { break };
            let Some(key) = ix.owners.get(&v).copied() else {
                continue;
            };
            ix.drop_where(key, |e| e.id == v);
            self.remove_files(key, &[v]);
            evicted += 1;
        }
        evicted
    }

    /// The object stored for `url` that a request without headers selects,
    /// if its file is whole.
    pub fn get(&self, key: u64, url: &str) -> Option<Object> {
        self.get_for(key, url, std::iter::empty())
    }

    /// The newest object stored for `url` that a request with `request`
    /// headers selects (RFC 9111 §4.1), if its file is whole.
    pub fn get_for<'a, R>(&self, key: u64, url: &str, request: R) -> Option<Object>
    where
        R: IntoIterator<Item = (&'a str, &'a [u8])> + Clone,
    {
        let id = {
            let mut ix = self.index.lock().expect("disk index lock");
            let id = ix
                .urls
                .get(&key)?
                .iter()
                .rev()
                .find(|e| e.vary.as_ref().is_none_or(|v| v.matches(request.clone())))?
                .id;
            ix.policy.hit(id);
            id
        };
        let path = self.path(key, id);
        let whole = fs::read(&path).ok().and_then(decode);
        match whole {
            Some(o) if o.url == url => Some(o),
            Some(_) => None,
            None => {
                let mut ix = self.index.lock().expect("disk index lock");
                // A file removed since it was looked up is not damage.
                if !ix.drop_where(key, |e| e.id == id).is_empty() {
                    self.corrupt.fetch_add(1, Ordering::Relaxed);
                    let _ = fs::remove_file(&path);
                }
                None
            }
        }
    }

    /// Writes `object`; it becomes visible only once completely written.
    /// It replaces what it supersedes as in the memory store; an object
    /// with `Vary` but no secondary key is not stored.
    pub fn put(&self, object: &Object) -> io::Result<()> {
        self.put_if(object, || true)
    }

    /// [`DiskStore::put`] if `still_wanted()`, asked under the index lock
    /// just before the file takes its place: a write that lost a race with
    /// a removal of its URL must not bring the removed copy back.
    pub fn put_if(&self, object: &Object, still_wanted: impl FnOnce() -> bool) -> io::Result<()> {
        let key = object.key();
        if !object.storable_key() {
            self.remove(key);
            return Ok(());
        }
        let id = file_id(key, object.vary.as_ref());
        let bytes = encode(object);
        if bytes.len() as u64 > self.capacity {
            return Ok(());
        }
        let seq = self.tmp_seq.fetch_add(1, Ordering::Relaxed);
        let tmp = self
            .dir
            .join("tmp")
            .join(format!("{}-{seq}", std::process::id()));
        let dest = self.path(key, id);
        let failed = |e| {
            let _ = fs::remove_file(&tmp);
            Err(e)
        };
        let write = || -> io::Result<()> {
            let mut f = fs::File::create(&tmp)?;
            f.write_all(&bytes)?;
            Ok(())
        };
        if let Err(e) = write() {
            return failed(e);
        }
        {
            let mut ix = self.index.lock().expect("disk index lock");
            if !still_wanted() {
                drop(ix);
                let _ = fs::remove_file(&tmp);
                return Ok(());
            }
            // Renamed under the lock, so files take their places in the
            // order the index records them.
            let placed = dest
                .parent()
                .map_or(Ok(()), fs::create_dir_all)
                .and_then(|()| fs::rename(&tmp, &dest));
            if let Err(e) = placed {
                drop(ix);
                return failed(e);
            }
            let plain = object.vary.is_none();
            // The file it overwrote (a reload, a freshened copy) keeps its
            // place in the policy.
            let replacing = ix.detach(key, id);
            let mut gone = ix.drop_where(key, |e| plain || e.vary.is_none());
            let oldest: Vec<u64> = ix.urls.get(&key).map_or(Vec::new(), |v| {
                let extra = (v.len() + 1).saturating_sub(MAX_VARIANTS);
                v.iter().take(extra).map(|e| e.id).collect()
            });
            gone.extend(ix.drop_where(key, |e| oldest.contains(&e.id)));
            let vary = object.vary.clone();
            ix.add(
                key,
                Entry {
                    id,
                    size: bytes.len() as u64,
                    vary,
                },
                replacing,
            );
            gone.retain(|g| *g != id);
            self.remove_files(key, &gone);
        }
        let evicted = self.evict_to_capacity();
        self.evicted.fetch_add(evicted as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Drops every variant of the URL with this key.
    pub fn remove(&self, key: u64) {
        let mut ix = self.index.lock().expect("disk index lock");
        let gone = ix.drop_where(key, |_| true);
        self.remove_files(key, &gone);
    }

    /// Objects stored (variants count one each).
    pub fn len(&self) -> usize {
        self.index.lock().expect("disk index lock").owners.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn bytes(&self) -> u64 {
        self.index.lock().expect("disk index lock").policy.bytes()
    }

    /// Files evicted to stay within the capacity since the store opened
    /// (those evicted on opening a smaller store are in its
    /// [`OpenReport`]).
    pub fn evictions(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    /// The store's size limit in bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Damaged files found (and deleted) on read so far.
    pub fn corrupt_reads(&self) -> u64 {
        self.corrupt.load(Ordering::Relaxed)
    }

    /// The file the object without `Vary` of `url` lives in (tests damage
    /// it on purpose).
    pub fn file_of(&self, url: &str) -> PathBuf {
        let key = crate::key_of(url);
        self.path(key, key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(url: &str, body: &[u8]) -> Object {
        Object {
            url: url.into(),
            status: 200,
            head: Bytes::from_static(
                b"Content-Type: text/plain\r\nLast-Modified: Sun, 22 Nov 2026 00:00:00 GMT\r\n",
            ),
            body: Bytes::copy_from_slice(body),
            fresh: Freshness::of_reply([("Cache-Control", b"max-age=60".as_slice())], 10, 11),
            timing: Some(Timing {
                first_byte: std::time::Duration::from_micros(2500),
                transfer: std::time::Duration::from_micros(700),
                served: std::time::Duration::from_micros(3300),
            }),
            vary: None,
        }
    }

    #[test]
    fn objects_survive_a_reopen_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let (s, r) = DiskStore::open(dir.path(), 1 << 20, Policy::S3Fifo).unwrap();
        assert_eq!(r, OpenReport::default());
        let a = object("http://o/a", b"hello");
        s.put(&a).unwrap();
        s.put(&object("http://o/b", &[7u8; 5000])).unwrap();
        drop(s);
        let (s, r) = DiskStore::open(dir.path(), 1 << 20, Policy::S3Fifo).unwrap();
        assert_eq!((r.objects, r.discarded), (2, 0));
        let got = s.get(crate::key_of("http://o/a"), "http://o/a").unwrap();
        assert_eq!(got.body, a.body);
        assert_eq!(got.head, a.head);
        assert_eq!(got.fresh, a.fresh);
        assert_eq!(got.timing, a.timing);
        assert!(s.get(crate::key_of("http://o/c"), "http://o/c").is_none());
    }

    #[test]
    fn a_damaged_or_torn_file_is_never_served() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = DiskStore::open(dir.path(), 1 << 20, Policy::S3Fifo).unwrap();
        for u in ["http://o/flip", "http://o/torn"] {
            s.put(&object(u, &[1u8; 3000])).unwrap();
        }
        // A flipped byte in the body is caught by the checksum on read.
        let flip = s.file_of("http://o/flip");
        let mut bytes = fs::read(&flip).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 1;
        fs::write(&flip, bytes).unwrap();
        assert!(s
            .get(crate::key_of("http://o/flip"), "http://o/flip")
            .is_none());
        assert_eq!(s.corrupt_reads(), 1);
        assert!(!flip.exists());
        // A truncated file is dropped when the store opens; so are
        // leftovers of an interrupted write.
        let torn = s.file_of("http://o/torn");
        let bytes = fs::read(&torn).unwrap();
        fs::write(&torn, &bytes[..bytes.len() - 10]).unwrap();
        fs::write(dir.path().join("tmp").join("999-1"), b"half").unwrap();
        drop(s);
        let (s, r) = DiskStore::open(dir.path(), 1 << 20, Policy::S3Fifo).unwrap();
        assert_eq!((r.objects, r.discarded), (0, 1));
        assert!(s.is_empty());
        assert_eq!(fs::read_dir(dir.path().join("tmp")).unwrap().count(), 0);
    }

    #[test]
    fn the_store_keeps_to_its_size_and_shrinks_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = DiskStore::open(dir.path(), 100_000, Policy::S3Fifo).unwrap();
        for i in 0..50 {
            s.put(&object(&format!("http://o/{i}"), &[0u8; 10_000]))
                .unwrap();
            assert!(s.bytes() <= 100_000);
        }
        let files: usize = fs::read_dir(dir.path().join("objects"))
            .unwrap()
            .map(|d| fs::read_dir(d.unwrap().path()).unwrap().count())
            .sum();
        assert_eq!(files, s.len());
        drop(s);
        let (s, r) = DiskStore::open(dir.path(), 30_000, Policy::Lru).unwrap();
        assert!(r.evicted > 0 && s.bytes() <= 30_000, "{r:?}");
    }

    #[test]
    fn a_replaced_file_keeps_what_its_uses_earned() {
        // Used, then overwritten (a reload, a freshened copy): not a new
        // object on probation again, so one-hit wonders do not push it out.
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = DiskStore::open(dir.path(), 200_000, Policy::S3Fifo).unwrap();
        let (u, k) = ("http://o/kept", crate::key_of("http://o/kept"));
        s.put(&object(u, &[1u8; 1000])).unwrap();
        assert!(s.get(k, u).is_some());
        s.put(&object(u, &[2u8; 1000])).unwrap();
        assert_eq!(s.len(), 1);
        for i in 0..500 {
            s.put(&object(&format!("http://o/{i}"), &[0u8; 1000]))
                .unwrap();
            assert!(s.bytes() <= 200_000);
        }
        assert_eq!(s.get(k, u).unwrap().body[0], 2);
    }

    fn h<'a>(v: &'a [(&'a str, &'a str)]) -> impl Iterator<Item = (&'a str, &'a [u8])> + Clone {
        v.iter().map(|(n, v)| (*n, v.as_bytes()))
    }

    fn variant(url: &str, enc: &str) -> Object {
        let mut o = object(url, enc.as_bytes());
        o.head = Bytes::from_static(b"Vary: Accept-Encoding\r\n");
        o.keyed_by(h(&[("Accept-Encoding", enc)]))
    }

    fn files(dir: &Path) -> usize {
        fs::read_dir(dir.join("objects"))
            .unwrap()
            .map(|d| fs::read_dir(d.unwrap().path()).unwrap().count())
            .sum()
    }

    /// `o` as format 1 wrote it: old magic, meta without the fields
    /// format 2 added.
    fn v1_file(o: &Object) -> Vec<u8> {
        let mut meta = serde_json::to_value(Meta {
            url: o.url.clone(),
            status: o.status,
            fresh: o.fresh,
            timing: o.timing,
            vary: None,
        })
        .unwrap();
        let m = meta.as_object_mut().unwrap();
        m.remove("vary");
        for f in ["heuristic", "stale_while_revalidate", "stale_if_error"] {
            m["fresh"].as_object_mut().unwrap().remove(f);
        }
        let meta = serde_json::to_vec(&meta).unwrap();
        frame(MAGIC_V1, &meta, &o.head, &o.body)
    }

    #[test]
    fn rfc9111_4_1_variants_persist_with_their_secondary_keys() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = DiskStore::open(dir.path(), 1 << 20, Policy::S3Fifo).unwrap();
        let u = "http://o/v";
        let k = crate::key_of(u);
        s.put(&variant(u, "gzip")).unwrap();
        s.put(&variant(u, "br")).unwrap();
        s.put(&variant(u, "gzip")).unwrap();
        assert_eq!((s.len(), files(dir.path())), (2, 2));
        drop(s);
        let (s, r) = DiskStore::open(dir.path(), 1 << 20, Policy::S3Fifo).unwrap();
        assert_eq!((r.objects, r.discarded), (2, 0));
        let got = s.get_for(k, u, h(&[("accept-encoding", "br")])).unwrap();
        assert_eq!(got.body, "br");
        assert_eq!(got.vary, variant(u, "br").vary);
        assert!(s.get_for(k, u, h(&[("Accept-Encoding", "zstd")])).is_none());
        assert!(s.get(k, u).is_none());
        // A reply without Vary replaces them all, files included.
        s.put(&object(u, b"plain")).unwrap();
        assert_eq!((s.len(), files(dir.path())), (1, 1));
        assert_eq!(
            s.get_for(k, u, h(&[("Accept-Encoding", "br")]))
                .unwrap()
                .body,
            "plain"
        );
        s.put(&variant(u, "br")).unwrap();
        assert_eq!((s.len(), files(dir.path())), (1, 1));
        s.remove(k);
        assert_eq!((s.len(), files(dir.path()), s.bytes()), (0, 0, 0));
    }

    #[test]
    fn rfc9111_4_1_disk_variants_are_bounded_and_unkeyed_vary_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = DiskStore::open(dir.path(), 1 << 20, Policy::Lru).unwrap();
        let u = "http://o/v";
        for i in 0..MAX_VARIANTS + 2 {
            s.put(&variant(u, &format!("e{i}"))).unwrap();
        }
        assert_eq!((s.len(), files(dir.path())), (MAX_VARIANTS, MAX_VARIANTS));
        let k = crate::key_of(u);
        assert!(s.get_for(k, u, h(&[("Accept-Encoding", "e1")])).is_none());
        assert!(s.get_for(k, u, h(&[("Accept-Encoding", "e2")])).is_some());
        let mut bad = object(u, b"?");
        bad.head = Bytes::from_static(b"Vary: Accept\r\n");
        s.put(&bad).unwrap();
        assert_eq!((s.len(), files(dir.path())), (0, 0));
    }

    #[test]
    fn format_1_files_are_read_unless_they_carry_vary() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = DiskStore::open(dir.path(), 1 << 20, Policy::S3Fifo).unwrap();
        let (plain, varied) = (object("http://o/p", b"old"), object("http://o/v", b"old"));
        let mut varied_v1 = varied.clone();
        varied_v1.head = Bytes::from_static(b"Vary: Accept\r\n");
        for o in [&plain, &varied] {
            s.put(o).unwrap();
        }
        fs::write(s.file_of("http://o/p"), v1_file(&plain)).unwrap();
        fs::write(s.file_of("http://o/v"), v1_file(&varied_v1)).unwrap();
        drop(s);
        let (s, r) = DiskStore::open(dir.path(), 1 << 20, Policy::S3Fifo).unwrap();
        assert_eq!((r.objects, r.discarded), (1, 1));
        let got = s.get(crate::key_of("http://o/p"), "http://o/p").unwrap();
        assert_eq!(
            (got.body.clone(), got.head.clone(), got.vary.clone()),
            (plain.body, plain.head, None)
        );
        assert!(got.fresh.heuristic && got.fresh.stale_if_error.is_none());
        assert_eq!(got.fresh.max_age, plain.fresh.max_age);
    }

    #[test]
    fn a_kill_between_replacing_and_deleting_drops_the_url_at_open() {
        let dir = tempfile::tempdir().unwrap();
        let (s, _) = DiskStore::open(dir.path(), 1 << 20, Policy::S3Fifo).unwrap();
        let u = "http://o/v";
        s.put(&variant(u, "gzip")).unwrap();
        let variant_file = fs::read_dir(s.file_of(u).parent().unwrap())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let bytes = fs::read(&variant_file).unwrap();
        s.put(&object(u, b"plain")).unwrap();
        // As if killed before the superseded variant was deleted.
        fs::write(&variant_file, bytes).unwrap();
        drop(s);
        let (s, r) = DiskStore::open(dir.path(), 1 << 20, Policy::S3Fifo).unwrap();
        assert_eq!((r.objects, r.discarded), (0, 2));
        assert!(s.is_empty() && files(dir.path()) == 0);
        // A file whose name does not match its secondary key is dropped.
        s.put(&variant(u, "gzip")).unwrap();
        let f = fs::read_dir(s.file_of(u).parent().unwrap())
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        fs::rename(
            &f,
            f.with_file_name(format!("{:016x}-{:016x}", crate::key_of(u), 7)),
        )
        .unwrap();
        drop(s);
        let (_, r) = DiskStore::open(dir.path(), 1 << 20, Policy::S3Fifo).unwrap();
        assert_eq!((r.objects, r.discarded), (0, 1));
    }
}
