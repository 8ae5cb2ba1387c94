//! The suite's scripted origin server: one thread per connection, each
//! path answered by the script its check registered, every request
//! recorded per path so a check can tell what the proxy forwarded.
//!
//! Ownership: the script table and the log sit behind one mutex each;
//! scripts run outside them (a delayed reply holds no lock).

use crate::wire::{self, Headers, Reader};
use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A request as the origin saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// The request target as sent (origin form from a proxy).
    pub target: String,
    pub headers: Headers,
    pub body: Vec<u8>,
    /// 1 for the first request on this path, then 2, …
    pub n: usize,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        wire::header(&self.headers, name)
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
}

pub type Script = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

#[derive(Default)]
struct Table {
    scripts: Mutex<HashMap<String, Script>>,
    log: Mutex<HashMap<String, Vec<Seen>>>,
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
                    let t = t.clone();
                    let _ = std::thread::Builder::new()
                        .name("conform-origin-conn".into())
                        .spawn(move || serve(conn, &t));
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

    /// Requests that reached the origin for `path`, in order.
    pub fn seen(&self, path: &str) -> Vec<Seen> {
        self.table
            .log
            .lock()
            .unwrap()
            .get(path)
            .cloned()
            .unwrap_or_default()
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

fn serve(mut conn: TcpStream, table: &Table) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
    let _ = conn.set_nodelay(true);
    let mut reader = Reader::default();
    while let Ok(Some(head)) = reader.request(&mut conn) {
        let Ok(body) = reader.body(&mut conn, wire::request_framing(&head)) else {
            return;
        };
        // A proxy may send the absolute form: the path is the key.
        let path = head.path().split('?').next().unwrap_or("").to_string();
        let (method, target) = (head.method.as_str().to_string(), head.target);
        let headers = wire::lines(&head.headers);
        let seen = {
            let mut log = table.log.lock().unwrap();
            let list = log.entry(path.clone()).or_default();
            let seen = Seen {
                method,
                target,
                headers,
                body,
                n: list.len() + 1,
            };
            list.push(seen.clone());
            seen
        };
        let script = table.scripts.lock().unwrap().get(&path).cloned();
        let reply = match script {
            Some(s) => s(&seen),
            None => Reply::new(404, &[("Cache-Control", "no-store")], "no script"),
        };
        let Reply::Send {
            status,
            headers,
            body,
            delay,
        } = reply
        else {
            return;
        };
        std::thread::sleep(delay);
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
        for (n, v) in &headers {
            out.push_str(&format!("{n}: {v}\r\n"));
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        if seen.method != "HEAD" && !bodiless {
            bytes.extend_from_slice(&body);
        }
        if conn.write_all(&bytes).is_err() {
            return;
        }
    }
}
