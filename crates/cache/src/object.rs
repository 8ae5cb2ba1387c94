//! A stored reply and the key it is stored under.

use crate::freshness::Freshness;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};
use std::time::Duration;

/// The store's key for a URL. Keys are hashes; every object keeps its URL
/// and a lookup compares it, so a collision is a miss, never a wrong reply.
pub fn key_of(url: &str) -> u64 {
    // SipHash with fixed keys; keys never outlive the process except on
    // disk, where the index is rebuilt from the stored URLs.
    let mut h = std::hash::DefaultHasher::new();
    url.hash(&mut h);
    h.finish()
}

/// How long the origin took, for the Collector to replay on hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timing {
    /// From the request's arrival to the reply's first byte (connection
    /// set-up, name resolution and the origin's think time included).
    pub first_byte: Duration,
    /// From the first byte of the reply to its last.
    pub transfer: Duration,
    /// How long the miss took the proxy: from the request's arrival to
    /// the last byte written to the client (what each hit should take).
    #[serde(default)]
    pub served: Duration,
}

/// A complete stored reply.
#[derive(Debug, Clone)]
pub struct Object {
    pub url: String,
    pub status: u16,
    /// End-to-end header lines as received, each `Name: value\r\n`, without
    /// hop-by-hop headers and framing; the proxy adds its own.
    pub head: Bytes,
    pub body: Bytes,
    pub fresh: Freshness,
    pub timing: Option<Timing>,
}

impl Object {
    pub fn key(&self) -> u64 {
        key_of(&self.url)
    }

    /// Bytes this object costs the store (bookkeeping included).
    pub fn charge(&self) -> u64 {
        (self.url.len() + self.head.len() + self.body.len() + 256) as u64
    }

    /// The header lines, as (name, value) pairs.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> + Clone {
        self.head.split(|&b| b == b'\n').filter_map(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let i = line.iter().position(|&b| b == b':')?;
            let name = std::str::from_utf8(&line[..i]).ok()?;
            Some((name.trim(), line[i + 1..].trim_ascii()))
        })
    }
}
