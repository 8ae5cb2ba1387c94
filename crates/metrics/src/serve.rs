//! `GET /metrics` over HTTP/1.x on a thread of its own ([`Server`]).
//!
//! Ownership: the server's thread runs a single-threaded runtime. Its
//! accept loop owns the listener and the table of connection slots
//! (`Slots`, only ever touched on that thread); each connection is a task
//! holding one slot, which must deliver its whole request head (at most
//! [`MAX_REQUEST`] bytes) within [`Limits::request`] of its accept, not
//! per read, and take its reply within [`Limits::reply`]; then it is
//! closed. With every slot taken, a new connection takes the slot of the
//! one that has held its slot longest, which is closed at once: a client
//! dribbling bytes holds a slot for one deadline at most and can never
//! keep a scrape out, and no connection costs a thread. The registry is
//! encoded on this thread (its metrics are atomics, or mutexes held to
//! copy a few numbers): nothing here waits on the run, and the run never
//! waits here.

use crate::format::{encode, Format};
use prometheus_client::registry::Registry;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::AbortHandle;

/// Largest request head read; a longer one is answered 431.
pub const MAX_REQUEST: usize = 8 * 1024;
/// Connections served at once by default ([`Limits::slots`]).
pub const SLOTS: usize = 64;
/// Default time from a connection's accept to the end of its request
/// head ([`Limits::request`]).
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(2);
/// Default time to write a whole reply ([`Limits::reply`]): Prometheus
/// gives up on a scrape after 10 s by default (`scrape_timeout`).
pub const REPLY_DEADLINE: Duration = Duration::from_secs(10);

/// What bounds one connection's hold on the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections held at once; a new one past it takes the oldest's slot.
    pub slots: usize,
    /// From a connection's accept to the end of its request head.
    pub request: Duration,
    /// Writing the whole reply.
    pub reply: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            slots: SLOTS,
            request: REQUEST_DEADLINE,
            reply: REPLY_DEADLINE,
        }
    }
}

/// Connections the server closed before it was done with them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cut {
    /// At a deadline: the request head was incomplete, or the reply not
    /// taken.
    pub deadline: u64,
    /// To give their slot to a newer connection.
    pub evicted: u64,
}

struct Shared {
    registry: Registry,
    stop: Notify,
    /// Connection tasks alive (evicted ones until they are dropped).
    open: AtomicUsize,
    cut_deadline: AtomicU64,
    cut_evicted: AtomicU64,
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
    /// Binds `addr` (port 0 picks one) and starts serving `registry`
    /// within the default [`Limits`].
    pub fn start(addr: SocketAddr, registry: Registry) -> std::io::Result<Server> {
        Server::start_with(addr, registry, Limits::default())
    }

    /// [`Server::start`] within `limits`.
    pub fn start_with(
        addr: SocketAddr,
        registry: Registry,
        limits: Limits,
    ) -> std::io::Result<Server> {
        let listener = std::net::TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let listener = {
            let _in = rt.enter();
            TcpListener::from_std(listener)?
        };
        let shared = Arc::new(Shared {
            registry,
            stop: Notify::new(),
            open: AtomicUsize::new(0),
            cut_deadline: AtomicU64::new(0),
            cut_evicted: AtomicU64::new(0),
            scrapes: Mutex::new(0),
            scraped: Condvar::new(),
        });
        let sh = shared.clone();
        let limits = Limits {
            slots: limits.slots.max(1),
            ..limits
        };
        let thread = std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || {
                // Dropping the runtime when the loop ends closes the
                // listener and every connection still open.
                tokio::task::LocalSet::new().block_on(&rt, accept(listener, sh, limits));
            })?;
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

    /// Connections open now (at most [`Limits::slots`], and for a moment
    /// those just evicted).
    pub fn open(&self) -> usize {
        self.shared.open.load(Ordering::Acquire)
    }

    /// Connections closed early so far, by reason.
    pub fn cut(&self) -> Cut {
        Cut {
            deadline: self.shared.cut_deadline.load(Ordering::Relaxed),
            evicted: self.shared.cut_evicted.load(Ordering::Relaxed),
        }
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
        // A permit if the loop is not waiting yet: it stops either way.
        self.shared.stop.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The connections holding a slot: those still reading their request,
/// oldest first (a new connection over the limit takes the oldest one's
/// slot), and how many are answering (bounded by the reply deadline: a
/// request read whole is never evicted, so a scrape's answer is not cut
/// by a crowd of slow clients).
struct Slots {
    limit: usize,
    next: u64,
    held: VecDeque<(u64, AbortHandle)>,
    answering: usize,
}

/// One connection's slot, given back when its task ends or is dropped
/// (evicted, or the server stopping), whichever path it takes.
struct Slot {
    id: u64,
    slots: Rc<RefCell<Slots>>,
    shared: Arc<Shared>,
    answering: bool,
}

impl Slot {
    /// Its request is read: from now on only the reply deadline ends it.
    fn answering(&mut self) {
        let mut s = self.slots.borrow_mut();
        if let Some(i) = s.held.iter().position(|(id, _)| *id == self.id) {
            s.held.remove(i);
            s.answering += 1;
            self.answering = true;
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut s = self.slots.borrow_mut();
        if self.answering {
            s.answering -= 1;
        } else if let Some(i) = s.held.iter().position(|(id, _)| *id == self.id) {
            s.held.remove(i);
        }
        self.shared.open.fetch_sub(1, Ordering::AcqRel);
    }
}

async fn accept(listener: TcpListener, sh: Arc<Shared>, limits: Limits) {
    let slots = Rc::new(RefCell::new(Slots {
        limit: limits.slots,
        next: 0,
        held: VecDeque::new(),
        answering: 0,
    }));
    loop {
        let stream = tokio::select! {
            _ = sh.stop.notified() => return,
            conn = listener.accept() => match conn {
                Ok((s, _)) => s,
                Err(_) => {
                    // Out of descriptors, or a connection reset before
                    // accept.
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
            },
        };
        let deadline = tokio::time::Instant::now() + limits.request;
        let (id, victim) = {
            let mut s = slots.borrow_mut();
            s.next += 1;
            let victim = if s.held.len() + s.answering >= s.limit {
                s.held.pop_front()
            } else {
                None
            };
            (s.next, victim)
        };
        if let Some((_, task)) = victim {
            task.abort();
            sh.cut_evicted.fetch_add(1, Ordering::Relaxed);
        }
        sh.open.fetch_add(1, Ordering::AcqRel);
        let slot = Slot {
            id,
            slots: slots.clone(),
            shared: sh.clone(),
            answering: false,
        };
        // The task first runs after this loop's next wait: its handle is
        // in the table before it can end.
        let task = tokio::task::spawn_local(connection(stream, sh.clone(), deadline, limits, slot));
        slots.borrow_mut().held.push_back((id, task.abort_handle()));
        // The connections accepted so far read what they were sent before
        // the next one may take the oldest's slot: a burst of accepts
        // after a busy moment would evict a scrape whose request is there.
        tokio::task::yield_now().await;
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

/// One connection: its request head by `deadline`, then the reply
/// within `limits.reply`, then the close (the slot goes with it).
async fn connection(
    mut stream: TcpStream,
    sh: Arc<Shared>,
    deadline: tokio::time::Instant,
    limits: Limits,
    mut slot: Slot,
) {
    let _ = stream.set_nodelay(true);
    let Ok(ask) = tokio::time::timeout_at(deadline, read_head(&mut stream)).await else {
        sh.cut_deadline.fetch_add(1, Ordering::Relaxed);
        // Only what the socket takes at once: this client is slow.
        let _ = stream.try_write(
            b"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        );
        return;
    };
    slot.answering();
    let out = reply(&ask, &sh);
    let sent = tokio::time::timeout(limits.reply, async {
        stream.write_all(&out).await?;
        stream.shutdown().await
    })
    .await;
    if sent.is_err() {
        sh.cut_deadline.fetch_add(1, Ordering::Relaxed);
    }
}

/// Reads one request head (at most [`MAX_REQUEST`] bytes).
async fn read_head(stream: &mut TcpStream) -> Ask {
    let mut buf = vec![0u8; MAX_REQUEST];
    let mut len = 0;
    loop {
        match stream.read(&mut buf[len..]).await {
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

/// The whole reply to `ask`; a `/metrics` one is counted as a scrape.
fn reply(ask: &Ask, sh: &Shared) -> Vec<u8> {
    let (status, ctype, body, head_only) = match *ask {
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
    out
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
