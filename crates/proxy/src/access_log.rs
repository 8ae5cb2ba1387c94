//! The access log in Squid's native format, so existing log tools (and
//! our tests' comparisons with Squid) read it as they read Squid's:
//!
//! `time.ms elapsed_ms client code/status bytes method URL - hierarchy/peer type`
//!
//! Locking: lines are formatted by the caller and appended under one
//! mutex to a buffered file; a flusher thread writes the buffer out every
//! second and the proxy flushes on shutdown.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::IpAddr;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// How a request was handled, named as Squid names it (`%Ss`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogCode {
    Hit,
    MemHit,
    /// A conditional request answered 304 from the store.
    ImsHit,
    Miss,
    /// The client asked for a reload.
    ClientRefreshMiss,
    /// A stale object the origin confirmed (304).
    RefreshUnmodified,
    /// A stale object the origin replaced.
    RefreshModified,
    Denied,
    /// No request could be read (bad syntax, limits).
    None,
}

impl LogCode {
    pub fn squid_name(self) -> &'static str {
        match self {
            LogCode::Hit => "TCP_HIT",
            LogCode::MemHit => "TCP_MEM_HIT",
            LogCode::ImsHit => "TCP_IMS_HIT",
            LogCode::Miss => "TCP_MISS",
            LogCode::ClientRefreshMiss => "TCP_CLIENT_REFRESH_MISS",
            LogCode::RefreshUnmodified => "TCP_REFRESH_UNMODIFIED",
            LogCode::RefreshModified => "TCP_REFRESH_MODIFIED",
            LogCode::Denied => "TCP_DENIED",
            LogCode::None => "TAG_NONE",
        }
    }
}

/// One finished transaction.
pub struct LogEntry<'a> {
    pub finished: SystemTime,
    pub elapsed: Duration,
    pub client: IpAddr,
    pub code: LogCode,
    pub status: u16,
    /// Bytes sent to the client, head included.
    pub bytes: u64,
    pub method: &'a str,
    pub url: &'a str,
    /// The origin (or parent) contacted, if any.
    pub peer: Option<IpAddr>,
    /// The peer was the parent proxy (`--parent`), not the origin.
    pub via_parent: bool,
    pub content_type: &'a str,
}

impl LogEntry<'_> {
    pub fn format(&self, out: &mut String) {
        let t = self
            .finished
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default();
        let hier = match self.peer {
            Some(p) if self.via_parent => format!("FIRSTUP_PARENT/{p}"),
            Some(p) => format!("HIER_DIRECT/{p}"),
            None => "HIER_NONE/-".to_string(),
        };
        let ctype = if self.content_type.is_empty() {
            "-"
        } else {
            self.content_type
        };
        let _ = writeln!(
            out,
            "{}.{:03} {:6} {} {}/{:03} {} {} {} - {} {}",
            t.as_secs(),
            t.subsec_millis(),
            self.elapsed.as_millis(),
            self.client,
            self.code.squid_name(),
            self.status,
            self.bytes,
            self.method,
            self.url,
            hier,
            ctype
        );
    }
}

pub struct AccessLog {
    out: Mutex<BufWriter<File>>,
}

impl AccessLog {
    pub fn create(path: &Path) -> std::io::Result<AccessLog> {
        let f = File::options().create(true).append(true).open(path)?;
        Ok(AccessLog {
            out: Mutex::new(BufWriter::with_capacity(256 * 1024, f)),
        })
    }

    pub fn write(&self, e: &LogEntry<'_>) {
        let mut line = String::with_capacity(160);
        e.format(&mut line);
        let mut out = self.out.lock().expect("access log lock");
        // A full disk must not stop the proxy; the log loses lines instead.
        let _ = out.write_all(line.as_bytes());
    }

    pub fn flush(&self) {
        let _ = self.out.lock().expect("access log lock").flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_read_like_squids() {
        let mut s = String::new();
        LogEntry {
            finished: SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_000_000_123),
            elapsed: Duration::from_millis(42),
            client: "127.0.0.1".parse().unwrap(),
            code: LogCode::Miss,
            status: 200,
            bytes: 1536,
            method: "GET",
            url: "http://127.2.0.1:8080/x",
            peer: Some("127.2.0.1".parse().unwrap()),
            via_parent: false,
            content_type: "text/html",
        }
        .format(&mut s);
        assert_eq!(
            s,
            "1795000000.123     42 127.0.0.1 TCP_MISS/200 1536 GET http://127.2.0.1:8080/x - HIER_DIRECT/127.2.0.1 text/html\n"
        );
        let mut p = String::new();
        LogEntry {
            finished: SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_000_000_123),
            elapsed: Duration::from_millis(42),
            client: "127.0.0.1".parse().unwrap(),
            code: LogCode::Miss,
            status: 200,
            bytes: 1536,
            method: "GET",
            url: "http://127.2.0.1:8080/x",
            peer: Some("127.0.0.3".parse().unwrap()),
            via_parent: true,
            content_type: "text/html",
        }
        .format(&mut p);
        assert!(p.contains(" - FIRSTUP_PARENT/127.0.0.3 "), "{p}");
    }
}
