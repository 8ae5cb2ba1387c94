//! The suite's HTTP/1.1 client: one connection per request to the proxy
//! under test, in absolute form for a forward proxy and origin form with
//! the origin's `Host` for a surrogate.

use crate::wire::{self, Headers, Reader};
use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How the proxy under test is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A forward proxy: requests name the origin in absolute form.
    Forward,
    /// A surrogate (reverse proxy) configured to route to the origin.
    Reverse,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Forward => "forward",
            Mode::Reverse => "reverse",
        }
    }
}

/// The proxy under test and the origin behind it.
#[derive(Debug, Clone)]
pub struct Target {
    pub mode: Mode,
    pub proxy: SocketAddr,
    pub origin: SocketAddr,
    /// The `Host` a surrogate routes by (a name in its origin map); `None`:
    /// the origin's address.
    pub host: Option<String>,
}

/// Longest wait for a whole response: a proxy that hangs fails its check
/// instead of holding the suite.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A response as the client got it; `status` 0 if none came (`error`
/// says why).
#[derive(Debug, Clone, Default)]
pub struct Resp {
    pub status: u16,
    pub headers: Headers,
    pub body: Vec<u8>,
    pub error: Option<String>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        wire::header(&self.headers, name)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// `Age` as a number, if present and valid.
    pub fn age(&self) -> Option<u64> {
        self.header("age")?.trim().parse().ok()
    }
}

/// The request text for `method path` with extra header lines.
pub fn request_text(
    t: &Target,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let target = match t.mode {
        Mode::Forward => format!("http://{}{path}", t.origin),
        Mode::Reverse => path.to_string(),
    };
    let host = match (&t.host, t.mode) {
        (Some(h), Mode::Reverse) => h.clone(),
        _ => t.origin.to_string(),
    };
    let mut out = format!("{method} {target} HTTP/1.1\r\nHost: {host}\r\n");
    for (n, v) in headers {
        out.push_str(&format!("{n}: {v}\r\n"));
    }
    if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
        out.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    out.push_str("Connection: close\r\n\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// Sends one request and reads its final response.
pub fn exchange(
    t: &Target,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Resp {
    let text = request_text(t, method, path, headers, body);
    match try_exchange(t, method, &text) {
        Ok(r) => r,
        Err(e) => Resp {
            error: Some(e.to_string()),
            ..Resp::default()
        },
    }
}

fn try_exchange(t: &Target, method: &str, text: &[u8]) -> std::io::Result<Resp> {
    let mut s = TcpStream::connect_timeout(&t.proxy, TIMEOUT)?;
    s.set_read_timeout(Some(TIMEOUT))?;
    s.set_nodelay(true)?;
    s.write_all(text)?;
    let mut reader = Reader::default();
    loop {
        let Some(head) = reader.head(&mut s)? else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed without a response",
            ));
        };
        let mut hs = [httparse::EMPTY_HEADER; cacheoff_http::MAX_HEADERS];
        let mut r = httparse::Response::new(&mut hs);
        if !matches!(r.parse(&head), Ok(httparse::Status::Complete(_))) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "unparsable response head",
            ));
        }
        let status = r.code.unwrap_or(0);
        let headers = wire::lines(r.headers);
        if (100..200).contains(&status) {
            continue;
        }
        let bodiless = method == "HEAD" || status == 304 || status == 204;
        let body = match bodiless {
            true => Vec::new(),
            false => reader.body(&mut s, &headers, true)?,
        };
        return Ok(Resp {
            status,
            headers,
            body,
            error: None,
        });
    }
}
