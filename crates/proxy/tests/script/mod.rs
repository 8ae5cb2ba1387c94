//! A scripted origin and a raw client for conformance tests: each test
//! says, per request, the exact bytes the origin answers (split into the
//! writes it wants), and reads back every request the origin received.

#![allow(dead_code)]

use cacheoff_base::ManualClock;
use cacheoff_http::chunked::ChunkedDecoder;
use cacheoff_http::request::parse_request;
use cacheoff_http::response::parse_response;
use cacheoff_http::{Framing, RequestHead, ResponseHead};
use cacheoff_proxy::{Proxy, ProxyConfig, Upstream};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub const T0: u64 = 1_800_000_000;

pub fn date(t: u64) -> String {
    cacheoff_http::date::format(t as i64)
}

/// A request as the origin received it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub head: RequestHead,
    pub body: Vec<u8>,
    /// The connection it came on, numbered from 0 in the order accepted.
    pub conn: usize,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<String> {
        header_of(&self.head.headers, name)
    }
    pub fn has(&self, name: &str) -> bool {
        self.header(name).is_some()
    }
}

pub fn header_of(headers: &[(String, Vec<u8>)], name: &str) -> Option<String> {
    let mut values = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| String::from_utf8_lossy(v).into_owned());
    let first = values.next()?;
    Some(values.fold(first, |acc, v| format!("{acc}, {v}")))
}

/// What the origin writes for one request: pieces written separately
/// (with a pause between them, so they arrive in separate reads).
pub type Answer = Vec<Vec<u8>>;

type Script = dyn Fn(&Seen) -> Answer + Send + Sync;

/// An origin that answers each request as the test's script says.
pub struct Origin {
    pub addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    /// Connections the proxy has closed (or that failed), by number.
    closed: Arc<Mutex<Vec<usize>>>,
}

impl Origin {
    pub fn start(script: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> Origin {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let closed: Arc<Mutex<Vec<usize>>> = Arc::default();
        let script: Arc<Script> = Arc::new(script);
        let (log, ended) = (seen.clone(), closed.clone());
        std::thread::spawn(move || {
            for (conn, s) in l.incoming().enumerate() {
                let Ok(s) = s else { return };
                let (log, ended, script) = (log.clone(), ended.clone(), script.clone());
                std::thread::spawn(move || {
                    serve(s, conn, &log, &*script);
                    ended.lock().unwrap().push(conn);
                });
            }
        });
        Origin { addr, seen, closed }
    }

    /// Whether connection `conn` has ended.
    pub fn closed(&self, conn: usize) -> bool {
        self.closed.lock().unwrap().contains(&conn)
    }

    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn count(&self) -> usize {
        self.seen.lock().unwrap().len()
    }

    pub fn last(&self) -> Seen {
        self.seen().pop().expect("the origin saw a request")
    }
}

fn serve(mut s: TcpStream, conn: usize, log: &Mutex<Vec<Seen>>, script: &Script) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(20)));
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    loop {
        let head = loop {
            match parse_request(&buf, true) {
                Ok(Some(h)) => break h,
                Ok(None) => {}
                Err(_) => return,
            }
            match s.read(&mut chunk) {
                Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                _ => return,
            }
        };
        buf.drain(..head.head_len);
        let mut body = Vec::new();
        if head.chunked {
            let mut dec = ChunkedDecoder::default();
            loop {
                let Ok(used) = dec.decode(&buf, |d| body.extend_from_slice(d)) else {
                    return;
                };
                buf.drain(..used);
                if dec.is_done() {
                    break;
                }
                match s.read(&mut chunk) {
                    Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                    _ => return,
                }
            }
        } else {
            let want = head.content_length.unwrap_or(0) as usize;
            while buf.len() < want {
                match s.read(&mut chunk) {
                    Ok(n) if n > 0 => buf.extend_from_slice(&chunk[..n]),
                    _ => return,
                }
            }
            body = buf.drain(..want).collect();
        }
        let seen = Seen { head, body, conn };
        log.lock().unwrap().push(seen.clone());
        let answer = script(&seen);
        for (i, piece) in answer.iter().enumerate() {
            if i > 0 {
                std::thread::sleep(Duration::from_millis(15));
            }
            if s.write_all(piece).is_err() {
                return;
            }
        }
        if answer.is_empty() {
            return;
        }
    }
}

/// A whole reply in one write.
pub fn whole(raw: impl Into<Vec<u8>>) -> Answer {
    vec![raw.into()]
}

/// `200 OK` with these header lines (each ending `\r\n`) and body.
pub fn ok(headers: &str, body: &str) -> Answer {
    whole(format!(
        "HTTP/1.1 200 OK\r\nDate: {}\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        date(T0),
        body.len()
    ))
}

/// The reference proxy in front of one scripted origin.
pub struct Bench {
    pub clock: Arc<ManualClock>,
    pub origin: Origin,
    pub proxy: Proxy,
}

impl Bench {
    pub fn new(script: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> Bench {
        Bench::tuned(script, |_| {})
    }

    pub fn tuned(
        script: impl Fn(&Seen) -> Answer + Send + Sync + 'static,
        tune: impl FnOnce(&mut ProxyConfig),
    ) -> Bench {
        let clock = Arc::new(ManualClock::new(T0));
        let origin = Origin::start(script);
        let mut cfg = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
        cfg.upstream = Upstream::Reverse(origin.addr.to_string());
        cfg.workers = 1;
        cfg.memory = 16 << 20;
        cfg.read_timeout = Duration::from_secs(3);
        cfg.clock = clock.clone();
        tune(&mut cfg);
        let proxy = Proxy::start(cfg).unwrap();
        Bench {
            clock,
            origin,
            proxy,
        }
    }

    /// `GET path` with extra header lines (each ending `\r\n`).
    pub fn get(&self, path: &str, extra: &str) -> Reply {
        self.send(&format!("GET {path} HTTP/1.1\r\nHost: o\r\n{extra}\r\n"))
    }

    pub fn send(&self, raw: &str) -> Reply {
        let mut c = Client::connect(self.proxy.addr());
        c.write(raw.as_bytes());
        c.reply(raw.starts_with("HEAD"))
    }

    pub fn client(&self) -> Client {
        Client::connect(self.proxy.addr())
    }
}

/// A reply as the client read it.
#[derive(Debug, Clone)]
pub struct Reply {
    pub interim: Vec<ResponseHead>,
    pub status: u16,
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<String> {
        header_of(&self.headers, name)
    }
    pub fn x_cache(&self) -> String {
        self.header("X-Cache").unwrap_or_default()
    }
    pub fn body(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One client connection, reading replies one at a time.
pub struct Client {
    pub s: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client { s, buf: Vec::new() }
    }

    pub fn write(&mut self, raw: &[u8]) {
        self.s.write_all(raw).unwrap();
    }

    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16384];
        match self.s.read(&mut chunk) {
            Ok(n) if n > 0 => {
                self.buf.extend_from_slice(&chunk[..n]);
                true
            }
            _ => false,
        }
    }

    /// Reads the next reply (interim ones first), or panics.
    pub fn reply(&mut self, head_request: bool) -> Reply {
        self.try_reply(head_request)
            .unwrap_or_else(|| panic!("no reply: {:?}", String::from_utf8_lossy(&self.buf)))
    }

    /// The next reply, or None if the connection ends first.
    pub fn try_reply(&mut self, head_request: bool) -> Option<Reply> {
        let mut interim = Vec::new();
        let h = loop {
            match parse_response(&self.buf, head_request, true).expect("a valid reply") {
                Some(h) if h.status < 200 => {
                    self.buf.drain(..h.head_len);
                    interim.push(h);
                }
                Some(h) => break h,
                None => {
                    if !self.fill() {
                        return None;
                    }
                }
            }
        };
        self.buf.drain(..h.head_len);
        let body = match h.framing {
            Framing::Empty => Vec::new(),
            Framing::Length(n) => {
                while self.buf.len() < n as usize {
                    if !self.fill() {
                        return None;
                    }
                }
                self.buf.drain(..n as usize).collect()
            }
            Framing::Chunked => {
                let mut dec = ChunkedDecoder::default();
                let mut body = Vec::new();
                loop {
                    let used = dec
                        .decode(&self.buf, |d| body.extend_from_slice(d))
                        .unwrap();
                    self.buf.drain(..used);
                    if dec.is_done() {
                        break body;
                    }
                    if !self.fill() {
                        return None;
                    }
                }
            }
            Framing::UntilClose => {
                while self.fill() {}
                std::mem::take(&mut self.buf)
            }
        };
        Some(Reply {
            interim,
            status: h.status,
            headers: h.headers,
            body,
        })
    }
}
