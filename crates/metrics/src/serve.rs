//! `GET /metrics` over HTTP/1.x on a thread of its own ([`Server`]).
//!
//! Ownership: the accept thread owns the listener; each connection gets a
//! short-lived thread (at most [`MAX_CONNECTIONS`] at once, more are
//! closed unanswered) that reads one request of at most
//! [`MAX_REQUEST`] bytes within [`IO_TIMEOUT`], encodes the registry
//! (its metrics are atomics, or mutexes held to copy a few numbers) and
//! closes. Nothing here waits on the run, and the run never waits here.

use crate::format::{encode, Format};
use prometheus_client::registry::Registry;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Largest request head read; a longer one is answered 431.
pub const MAX_REQUEST: usize = 8 * 1024;
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 8;
/// Reading the request and writing the reply, each.
pub const IO_TIMEOUT: Duration = Duration::from_secs(2);

struct Shared {
    registry: Registry,
    stop: AtomicBool,
    open: AtomicUsize,
    /// `/metrics` replies encoded so far.
    scrapes: Mutex<u64>,
    scraped: Condvar,
}

/// Serves the registry on `/metrics` until dropped.
pub struct Server {
    addr: SocketAddr,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` (port 0 picks one) and starts serving `registry`.
    pub fn start(addr: SocketAddr, registry: Registry) -> std::io::Result<Server> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            registry,
            stop: AtomicBool::new(false),
            open: AtomicUsize::new(0),
            scrapes: Mutex::new(0),
            scraped: Condvar::new(),
        });
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || accept(listener, sh))?;
        Ok(Server {
            addr,
            shared,
            thread: Some(thread),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `/metrics` answers so far.
    pub fn scrapes(&self) -> u64 {
        *self
            .shared
            .scrapes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Waits up to `limit` for a scrape after the `after`-th; true if one
    /// came. A run calls it at its end so that a scraper reads the final
    /// figures before the process exits.
    pub fn wait_for_scrape(&self, after: u64, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut n = self
            .shared
            .scrapes
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        while *n <= after {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            n = self
                .shared
                .scraped
                .wait_timeout(n, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        // Wake the blocking accept with a connection of our own.
        let mut wake = self.addr;
        if wake.ip().is_unspecified() {
            wake.set_ip(match wake {
                SocketAddr::V4(_) => std::net::Ipv4Addr::LOCALHOST.into(),
                SocketAddr::V6(_) => std::net::Ipv6Addr::LOCALHOST.into(),
            });
        }
        let _ = TcpStream::connect_timeout(&wake, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept(listener: TcpListener, sh: Arc<Shared>) {
    for conn in listener.incoming() {
        if sh.stop.load(Ordering::Relaxed) {
            break;
        }
        let Ok(stream) = conn else {
            // Out of descriptors, or a connection reset before accept.
            std::thread::sleep(Duration::from_millis(5));
            continue;
        };
        if sh.open.fetch_add(1, Ordering::AcqRel) >= MAX_CONNECTIONS {
            sh.open.fetch_sub(1, Ordering::AcqRel);
            continue;
        }
        let sh2 = sh.clone();
        let spawned = std::thread::Builder::new()
            .name("metrics-conn".into())
            .spawn(move || {
                serve(stream, &sh2);
                sh2.open.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            sh.open.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// What one request asks for.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ask {
    Metrics { format: Format, head_only: bool },
    NotFound,
    BadMethod,
    TooLarge,
    Bad,
}

/// Reads one request head (at most [`MAX_REQUEST`] bytes).
fn read_head(stream: &mut TcpStream) -> Ask {
    let mut buf = vec![0u8; MAX_REQUEST];
    let mut len = 0;
    loop {
        match stream.read(&mut buf[len..]) {
            Ok(0) | Err(_) => return Ask::Bad,
            Ok(n) => len += n,
        }
        match parse(&buf[..len]) {
            Some(ask) => return ask,
            None if len == buf.len() => return Ask::TooLarge,
            None => {}
        }
    }
}

/// The request in `head`, or `None` while it is incomplete.
pub(crate) fn parse(head: &[u8]) -> Option<Ask> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Partial) => None,
        Err(httparse::Error::TooManyHeaders) => Some(Ask::TooLarge),
        Err(_) => Some(Ask::Bad),
        Ok(httparse::Status::Complete(_)) => {
            let head_only = match req.method {
                Some("GET") => false,
                Some("HEAD") => true,
                _ => return Some(Ask::BadMethod),
            };
            let path = req.path.unwrap_or("");
            let path = path.split_once('?').map_or(path, |(p, _)| p);
            if path != "/metrics" {
                return Some(Ask::NotFound);
            }
            let accept = req
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("accept"))
                .and_then(|h| std::str::from_utf8(h.value).ok());
            Some(Ask::Metrics {
                format: Format::negotiate(accept),
                head_only,
            })
        }
    }
}

fn serve(mut stream: TcpStream, sh: &Shared) {
    let _ = stream.set_read_timeout(Some(IO_TIMEOUT));
    let _ = stream.set_write_timeout(Some(IO_TIMEOUT));
    let _ = stream.set_nodelay(true);
    let (status, ctype, body, head_only) = match read_head(&mut stream) {
        Ask::Metrics { format, head_only } => (
            "200 OK",
            format.content_type(),
            encode(&sh.registry, format),
            head_only,
        ),
        Ask::NotFound => (
            "404 Not Found",
            "text/plain",
            "only /metrics is here\n".into(),
            false,
        ),
        Ask::BadMethod => (
            "405 Method Not Allowed",
            "text/plain",
            "GET /metrics\n".into(),
            false,
        ),
        Ask::TooLarge => (
            "431 Request Header Fields Too Large",
            "text/plain",
            String::new(),
            false,
        ),
        Ask::Bad => ("400 Bad Request", "text/plain", String::new(), false),
    };
    let allow = if status.starts_with("405") {
        "Allow: GET, HEAD\r\n"
    } else {
        ""
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n{allow}Connection: close\r\n\r\n",
        body.len()
    );
    let mut out = head.into_bytes();
    if !head_only {
        out.extend_from_slice(body.as_bytes());
    }
    // Counted once encoded: the figures are on their way.
    if status.starts_with("200") {
        *sh.scrapes.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        sh.scraped.notify_all();
    }
    let _ = stream.write_all(&out).and_then(|()| stream.flush());
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_parsed_and_routed() {
        assert_eq!(parse(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"), None);
        assert_eq!(
            parse(b"GET /metrics?x=1 HTTP/1.1\r\nAccept: application/openmetrics-text\r\n\r\n"),
            Some(Ask::Metrics {
                format: Format::OpenMetrics,
                head_only: false
            })
        );
        assert_eq!(
            parse(b"HEAD /metrics HTTP/1.0\r\n\r\n"),
            Some(Ask::Metrics {
                format: Format::Text,
                head_only: true
            })
        );
        assert_eq!(parse(b"GET / HTTP/1.1\r\n\r\n"), Some(Ask::NotFound));
        assert_eq!(
            parse(b"GET /metricsx HTTP/1.1\r\n\r\n"),
            Some(Ask::NotFound)
        );
        assert_eq!(
            parse(b"POST /metrics HTTP/1.1\r\n\r\n"),
            Some(Ask::BadMethod)
        );
        assert_eq!(parse(b"\x01\x02 nonsense\r\n\r\n"), Some(Ask::Bad));
    }
}
