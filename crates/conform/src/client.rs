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
        let Some(head) = reader.response(&mut s, method == "HEAD")? else {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed without a response",
            ));
        };
        if (100..200).contains(&head.status) {
            continue;
        }
        // HEAD, 204 and 304 replies are framed empty by the codec.
        let body = reader.body(&mut s, head.framing)?;
        return Ok(Resp {
            status: head.status,
            headers: wire::lines(&head.headers),
            body,
            error: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::TcpListener;

    /// A proxy that answers one request with `reply` and closes.
    fn proxy(reply: &'static [u8]) -> Target {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut c, _) = l.accept().unwrap();
            let mut seen = Vec::new();
            let mut buf = [0u8; 1024];
            while !seen.ends_with(b"\r\n\r\n") {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            let _ = c.write_all(reply);
        });
        Target {
            mode: Mode::Forward,
            proxy: addr,
            origin: addr,
            host: None,
        }
    }

    #[test]
    fn interim_replies_are_skipped_and_a_chunked_body_decoded() {
        let t = proxy(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nAge: 3\r\n\
              Transfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
        );
        let r = exchange(&t, "GET", "/x", &[], b"");
        assert_eq!((r.status, r.text(), r.age()), (200, "hi".into(), Some(3)));
        assert!(r.error.is_none());
    }

    #[test]
    fn a_broken_reply_is_no_response_with_the_reason() {
        let t = proxy(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab");
        let r = exchange(&t, "GET", "/x", &[], b"");
        assert_eq!(r.status, 0);
        let why = r.error.unwrap();
        assert!(why.contains("ambiguous framing"), "{why}");
        let r = exchange(&proxy(b""), "GET", "/x", &[], b"");
        assert_eq!(r.error.unwrap(), "connection closed without a response");
    }
}
