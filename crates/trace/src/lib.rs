//! Real Web access traces: reading them, writing small sample ones, and the
//! hit ratios a trace allows at best.
//!
//! - [`TraceReader`] streams the [`Record`]s of one trace file (or any
//!   reader) in one of the [`Format`]s: Squid's native `access.log`, the
//!   Common/Combined Log Format, libCacheSim's binary oracleGeneral, the
//!   Wikimedia CDN 2019 TSV, or CSV with [`Columns`] named on the command
//!   line. gzip and zstd input is unwrapped on the fly and the format is
//!   detected from the first bytes when not given. Memory stays bounded
//!   whatever the trace's length; the first malformed line ends the
//!   iteration with a [`TraceError`] naming the file, line and field.
//! - [`ceiling`]: [`ceiling::CeilingCalc`] takes the records in one pass and
//!   gives [`ceiling::Ceilings`]: the document-hit ratios of an infinite
//!   cache, an LRU cache and Belady's MIN of a given size.
//! - [`curve`]: [`curve::LruCurve`] gives byte-weighted LRU's exact request
//!   and byte hit ratios at many cache sizes in one pass.
//! - [`sample`]: [`sample::synthetic`] makes a seeded trace and
//!   [`sample::write`] writes it in any format, so tests and examples never
//!   need a downloaded trace.
//!
//! Object identity is a stable 64-bit hash ([`hash_bytes`], FNV-1a) of the
//! URL, the same on every run and platform; the integrator maps
//! [`Record::site`] to an origin server and [`Record::key`] to an object.
//! This crate knows no sockets and no run-time.

pub mod ceiling;
mod csvfmt;
pub mod curve;
mod error;
mod format;
mod input;
mod oracle;
mod read;
pub mod sample;
mod text;

pub use error::{ErrorKind, TraceError};
pub use format::{Columns, Field, Format, TimeUnit};
pub use read::TraceReader;

/// The request method, as far as caching cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    Get,
    Head,
    Post,
    Other,
}

impl Method {
    /// Reads a method token (case-sensitive, as HTTP methods are).
    pub fn parse(token: &str) -> Method {
        match token {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "POST" => Method::Post,
            _ => Method::Other,
        }
    }

    /// The token written for it (`Other` writes as `PUT`).
    pub fn token(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Other => "PUT",
        }
    }
}

/// `next_access_vtime` of an object that is never requested again.
pub const NEVER: u64 = u64::MAX;

/// One request of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Microseconds since the trace's first record (earlier ones are 0).
    pub time_us: u64,
    /// Object identity: oracleGeneral's id, Wikimedia's hashed path, else
    /// [`hash_bytes`] of the URL (scheme, host, path and query).
    pub key: u64,
    /// [`hash_bytes`] of the URL's host (with its port), 0 without a host.
    pub site: u64,
    /// [`hash_bytes`] of the client's address or id, 0 without one.
    pub client: u64,
    /// Response body bytes as traced (Squid: bytes sent, headers included).
    pub size: u64,
    /// Traced time to first byte (Wikimedia, CSV).
    pub ttfb_us: Option<u64>,
    /// Traced whole response time (Squid's elapsed milliseconds).
    pub elapsed_us: Option<u64>,
    pub method: Method,
    pub status: Option<u16>,
    /// What the trace implies (see [`cachable_by_default`]); `None` when
    /// it says nothing (oracleGeneral, Wikimedia).
    pub cachable: Option<bool>,
    /// oracleGeneral's next access: the virtual time (request number
    /// counted from the file's first record, 0-based, as libCacheSim
    /// writes it) of the next request for the same object, [`NEVER`] when
    /// there is none; `None` in formats that do not carry it.
    pub next_access_vtime: Option<u64>,
}

/// Statuses that RFC 9110 §15.1 makes heuristically cachable.
const CACHABLE_STATUS: [u16; 12] = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501];

/// The cachability a trace line implies: only GET and HEAD, and only a
/// status cachable by default (RFC 9110 §15.1); a missing status does not
/// make a request uncachable. Squid's cache codes (TCP_MISS, ...) are
/// outcomes, not cachability, and are not consulted.
pub fn cachable_by_default(method: Method, status: Option<u16>) -> bool {
    matches!(method, Method::Get | Method::Head)
        && status.is_none_or(|s| CACHABLE_STATUS.contains(&s))
}

/// The stable 64-bit hash of keys, sites and clients: FNV-1a.
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_may_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<TraceReader>();
        send::<ceiling::CeilingCalc>();
    }

    #[test]
    fn fnv1a_is_the_published_one() {
        assert_eq!(hash_bytes(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(hash_bytes(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(hash_bytes(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn cachability_follows_method_and_status() {
        assert!(cachable_by_default(Method::Get, Some(200)));
        assert!(cachable_by_default(Method::Head, Some(404)));
        assert!(cachable_by_default(Method::Get, None));
        assert!(!cachable_by_default(Method::Get, Some(302)));
        assert!(!cachable_by_default(Method::Get, Some(500)));
        assert!(!cachable_by_default(Method::Post, Some(200)));
        assert!(!cachable_by_default(Method::Other, None));
    }
}
