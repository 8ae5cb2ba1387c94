//! A raw HTTP/1.1 client for tests: it sends the test's bytes exactly as
//! given (malformed, pipelined, dripped) and reads replies with the house
//! codec, through `cacheoff_conform`'s blocking [`Reader`]: heads by
//! `crates/http`'s scanner and parser, bodies by their framing (length,
//! chunked, close), interim replies kept apart.

use cacheoff_conform::Reader;
use cacheoff_http::ResponseHead;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long a read waits for the peer before the client gives up: long,
/// so that only a hang, never a busy machine, runs into it.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// A reply as the client read it.
#[derive(Debug, Clone)]
pub struct Response {
    /// `1xx` replies that came before it, in order.
    pub interim: Vec<ResponseHead>,
    /// Its head, every header kept in order.
    pub head: ResponseHead,
    /// The head as it came, byte for byte.
    pub raw_head: Vec<u8>,
    pub status: u16,
    /// The body, decoded from its framing.
    pub body: Vec<u8>,
}

impl Response {
    /// Every value of `name`, one per field line, in order.
    pub fn values(&self, name: &str) -> Vec<String> {
        self.head
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
            .collect()
    }

    /// The field `name`, its lines combined with `, ` (RFC 9110 §5.3).
    pub fn header(&self, name: &str) -> Option<String> {
        let values = self.values(name);
        (!values.is_empty()).then(|| values.join(", "))
    }

    /// The nearest cache's verdict: the first word of the last `X-Cache`
    /// (a parent's comes first; the Collector's says `HIT from
    /// cacheoff-collector`).
    pub fn x_cache(&self) -> String {
        let last = self.values("X-Cache").pop().unwrap_or_default();
        last.split(' ').next().unwrap_or("").to_string()
    }

    /// Every `Cache-Status` member, in order (RFC 9211: the cache nearest
    /// the origin first).
    pub fn cache_status(&self) -> Vec<String> {
        self.values("Cache-Status")
            .iter()
            .flat_map(|v| v.split(',').map(|m| m.trim().to_string()))
            .collect()
    }

    /// The nearest cache's `Cache-Status` member (the last).
    pub fn own_status(&self) -> String {
        self.cache_status().pop().unwrap_or_default()
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The head as text.
    pub fn head_text(&self) -> String {
        String::from_utf8_lossy(&self.raw_head).into_owned()
    }
}

/// One client connection, reading replies one at a time (pipelined
/// requests' replies in order).
pub struct Client {
    /// The socket, for what a test does beyond whole messages.
    pub s: TcpStream,
    reader: Reader,
}

impl Client {
    /// Connects to `addr`, or panics.
    pub fn connect(addr: SocketAddr) -> Client {
        Client::try_connect(addr).unwrap_or_else(|e| panic!("connect to {addr}: {e}"))
    }

    /// Connects to `addr` with [`TIMEOUT`] for each read.
    pub fn try_connect(addr: SocketAddr) -> io::Result<Client> {
        let s = TcpStream::connect(addr)?;
        s.set_read_timeout(Some(TIMEOUT))?;
        s.set_nodelay(true)?;
        Ok(Client::on(s))
    }

    /// A client on a connection the test made itself.
    pub fn on(s: TcpStream) -> Client {
        Client {
            s,
            reader: Reader::default(),
        }
    }

    /// Writes `raw` as it is, or panics.
    pub fn write(&mut self, raw: &[u8]) {
        self.s.write_all(raw).expect("write the request");
    }

    /// Writes `raw` and reads its reply (a `HEAD`'s has no body).
    pub fn send(&mut self, raw: &[u8]) -> Response {
        self.write(raw);
        self.reply(raw.starts_with(b"HEAD "))
    }

    /// The next reply, interim ones first; `head_request`: it answers a
    /// `HEAD`. Panics if none comes whole.
    pub fn reply(&mut self, head_request: bool) -> Response {
        match self.next(head_request) {
            Ok(Some(r)) => r,
            Ok(None) => panic!("no reply: the connection ended"),
            Err(e) => panic!("no whole reply: {e}"),
        }
    }

    /// The next reply, or `None` if the connection ends (or fails, or
    /// stays silent for [`TIMEOUT`]) before one comes whole.
    pub fn try_reply(&mut self, head_request: bool) -> Option<Response> {
        self.next(head_request).ok().flatten()
    }

    /// The next reply; `None` if the connection ended before its first
    /// byte, an error if it broke off in it or the codec refused it.
    pub fn next(&mut self, head_request: bool) -> io::Result<Option<Response>> {
        let mut interim = Vec::new();
        loop {
            let Some(head) = self.reader.response(&mut self.s, head_request)? else {
                return Ok(None);
            };
            if head.status >= 200 {
                let raw_head = self.reader.last_head().to_vec();
                let body = self.reader.body(&mut self.s, head.framing)?;
                return Ok(Some(Response {
                    interim,
                    status: head.status,
                    head,
                    raw_head,
                    body,
                }));
            }
            interim.push(head);
        }
    }

    /// Every byte after the last reply read until the peer closes (a
    /// reset or [`TIMEOUT`] ends it too).
    pub fn rest(&mut self) -> Vec<u8> {
        let mut out = self.reader.take_buffered();
        let _ = read_to_close(&mut self.s, &mut out);
        out
    }
}

/// One request on a new connection and its reply (a `HEAD`'s has no
/// body); panics if none comes whole.
pub fn exchange(addr: SocketAddr, raw: &[u8]) -> Response {
    Client::connect(addr).send(raw)
}

/// Sends `raw` on a new connection and returns every byte the peer sends
/// until it closes: the wire as it is, for tests of exact bytes. A reset
/// after the first byte ends it like a close; before it, it is the error.
pub fn read_all(addr: SocketAddr, raw: &[u8]) -> io::Result<Vec<u8>> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(TIMEOUT))?;
    s.write_all(raw)?;
    let mut out = Vec::new();
    match read_to_close(&mut s, &mut out) {
        Err(e) if out.is_empty() => Err(e),
        _ => Ok(out),
    }
}

fn read_to_close(s: &mut TcpStream, out: &mut Vec<u8>) -> io::Result<()> {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        match s.read(&mut chunk)? {
            0 => return Ok(()),
            n => out.extend_from_slice(&chunk[..n]),
        }
    }
}
