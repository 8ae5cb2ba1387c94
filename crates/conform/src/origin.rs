//! The scripted origin server: one thread per connection, each path
//! answered by the script registered for it (or the fallback), every
//! request recorded in arrival order with its number on its path and its
//! connection, so a check (or a test, through `crates/testkit`) can tell
//! what the proxy forwarded and on which connection.
//!
//! Ownership: the script table and the log sit behind one mutex each;
//! scripts run outside them (a delayed or paced reply holds no lock).

use crate::wire::{self, Headers, Reader};
use std::collections::HashMap;
use std::fmt;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A request as the origin saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// The request target as sent (origin form from a proxy).
    pub target: String,
    /// The target's path without its query: what scripts are keyed by.
    pub path: String,
    pub headers: Headers,
    /// The body, decoded (empty in the log when bodies are not kept).
    pub body: Vec<u8>,
    /// 1 for the first request on this path, then 2, …
    pub n: usize,
    /// The connection it came on, numbered from 0 in the order accepted.
    pub conn: usize,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        wire::header(&self.headers, name)
    }
}

/// What writes a reply on the connection itself.
pub type WriteFn = dyn Fn(&mut TcpStream) -> io::Result<()> + Send + Sync;

/// A reply the script writes itself, on the connection: any bytes at any
/// pace. An error ends the connection.
#[derive(Clone)]
pub struct Writer(pub Arc<WriteFn>);

impl fmt::Debug for Writer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Writer(..)")
    }
}

/// What the origin does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A response: status, header lines (`Date` and `Content-Length`
    /// added unless given), body, and a delay before it is sent.
    Send {
        status: u16,
        headers: Headers,
        body: Vec<u8>,
        delay: Duration,
    },
    /// The script writes the reply itself (raw bytes, in pieces, slowly).
    Write(Writer),
    /// Close the connection without answering: an origin that is down.
    Close,
}

impl Reply {
    pub fn new(status: u16, headers: &[(&str, &str)], body: &str) -> Reply {
        Reply::Send {
            status,
            headers: headers
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            body: body.as_bytes().to_vec(),
            delay: Duration::ZERO,
        }
    }

    pub fn ok(headers: &[(&str, &str)], body: &str) -> Reply {
        Reply::new(200, headers, body)
    }

    /// The same reply sent after `ms` milliseconds.
    pub fn after_ms(mut self, ms: u64) -> Reply {
        if let Reply::Send { delay, .. } = &mut self {
            *delay = Duration::from_millis(ms);
        }
        self
    }

    /// A reply `write` writes on the connection itself.
    pub fn write(
        write: impl Fn(&mut TcpStream) -> io::Result<()> + Send + Sync + 'static,
    ) -> Reply {
        Reply::Write(Writer(Arc::new(write)))
    }
}

pub type Script = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

#[derive(Default)]
struct Log {
    all: Vec<Seen>,
    /// Requests so far per path (the last one's `n`).
    per_path: HashMap<String, usize>,
}

#[derive(Default)]
struct Table {
    scripts: Mutex<HashMap<String, Script>>,
    fallback: Mutex<Option<Script>>,
    log: Mutex<Log>,
    /// Bodies are logged unless a test of memory turns it off.
    forget_bodies: AtomicBool,
    accepted: AtomicUsize,
    ended: Mutex<Vec<usize>>,
}

/// The origin: a listener on its own thread until dropped.
pub struct Origin {
    addr: SocketAddr,
    table: Arc<Table>,
    stop: Arc<AtomicBool>,
}

impl Origin {
    /// Listens on `addr` (port 0 for any).
    pub fn bind(addr: SocketAddr) -> io::Result<Origin> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let table = Arc::new(Table::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (t, s) = (table.clone(), stop.clone());
        std::thread::Builder::new()
            .name("conform-origin".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if s.load(Ordering::Relaxed) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let id = t.accepted.fetch_add(1, Ordering::SeqCst);
                    let t = t.clone();
                    let _ = std::thread::Builder::new()
                        .name("conform-origin-conn".into())
                        .spawn(move || {
                            serve(conn, id, &t);
                            t.ended.lock().unwrap().push(id);
                        });
                }
            })?;
        Ok(Origin { addr, table, stop })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answers requests for `path` with `script`.
    pub fn script(&self, path: &str, script: Script) {
        self.table
            .scripts
            .lock()
            .unwrap()
            .insert(path.to_string(), script);
    }

    /// Answers requests for paths without a script of their own (by
    /// default they get a 404).
    pub fn fallback(&self, script: Script) {
        *self.table.fallback.lock().unwrap() = Some(script);
    }

    /// Keeps request bodies out of the log (scripts still get them):
    /// for tests that measure this process's memory.
    pub fn forget_bodies(&self) {
        self.table.forget_bodies.store(true, Ordering::SeqCst);
    }

    /// Requests that reached the origin for `path`, in order.
    pub fn seen(&self, path: &str) -> Vec<Seen> {
        let log = self.table.log.lock().unwrap();
        log.all.iter().filter(|s| s.path == path).cloned().collect()
    }

    /// Every request so far, in the order they arrived.
    pub fn all(&self) -> Vec<Seen> {
        self.table.log.lock().unwrap().all.clone()
    }

    /// How many requests arrived, on any path.
    pub fn count(&self) -> usize {
        self.table.log.lock().unwrap().all.len()
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.table.accepted.load(Ordering::SeqCst)
    }

    /// Whether connection `conn` (numbered as in [`Seen::conn`]) has ended.
    pub fn ended(&self, conn: usize) -> bool {
        self.table.ended.lock().unwrap().contains(&conn)
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

fn serve(mut conn: TcpStream, id: usize, table: &Table) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let _ = conn.set_nodelay(true);
    let mut reader = Reader::default();
    while let Ok(Some(head)) = reader.request(&mut conn) {
        let Ok(body) = reader.body(&mut conn, wire::request_framing(&head)) else {
            return;
        };
        // A proxy may send the absolute form: the path is the key.
        let path = head.path().split('?').next().unwrap_or("").to_string();
        let mut seen = Seen {
            method: head.method.as_str().to_string(),
            target: head.target,
            path,
            headers: wire::lines(&head.headers),
            body,
            n: 0,
            conn: id,
        };
        {
            let mut log = table.log.lock().unwrap();
            let n = log.per_path.entry(seen.path.clone()).or_default();
            *n += 1;
            seen.n = *n;
            let body = std::mem::take(&mut seen.body);
            let mut logged = seen.clone();
            if !table.forget_bodies.load(Ordering::SeqCst) {
                logged.body = body.clone();
            }
            seen.body = body;
            log.all.push(logged);
        }
        let script = table.scripts.lock().unwrap().get(&seen.path).cloned();
        let script = script.or_else(|| table.fallback.lock().unwrap().clone());
        let reply = match script {
            Some(s) => s(&seen),
            None => Reply::new(404, &[("Cache-Control", "no-store")], "no script"),
        };
        let sent = match reply {
            Reply::Send {
                status,
                headers,
                body,
                delay,
            } => {
                std::thread::sleep(delay);
                let bytes = response(status, &headers, &body, seen.method == "HEAD");
                conn.write_all(&bytes)
            }
            Reply::Write(w) => (w.0)(&mut conn),
            Reply::Close => return,
        };
        if sent.is_err() {
            return;
        }
    }
}

/// A response's bytes: `Date` and `Content-Length` added unless given,
/// no body where the status or a HEAD request rules it out.
fn response(status: u16, headers: &Headers, body: &[u8], head: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status} {}\r\n",
        cacheoff_http::status::reason(status)
    );
    let has = |n: &str| headers.iter().any(|(h, _)| h.eq_ignore_ascii_case(n));
    if !has("date") {
        out.push_str(&format!("Date: {}\r\n", wire::date(0)));
    }
    let bodiless = status == 304 || status == 204 || (100..200).contains(&status);
    if !has("content-length") && !bodiless {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    if !head && !bodiless {
        bytes.extend_from_slice(body);
    }
    bytes
}
