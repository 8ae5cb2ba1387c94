//! Reading HTTP/1.1 messages off a blocking `TcpStream`, for both the
//! origin (requests) and the client (responses): heads through httparse,
//! bodies by `Content-Length`, chunked coding or the connection's end.

use std::io::{self, Read};
use std::net::TcpStream;

/// Header lines as sent, in order.
pub type Headers = Vec<(String, String)>;

/// The first value of `name` (case-insensitive).
pub fn header<'a>(h: &'a Headers, name: &str) -> Option<&'a str> {
    h.iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Bytes read from a connection that belong to the next message.
#[derive(Default)]
pub struct Reader {
    buf: Vec<u8>,
}

fn bad(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}

impl Reader {
    fn fill(&mut self, s: &mut TcpStream) -> io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let n = s.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// The next whole head; `None` if the connection ended before its
    /// first byte.
    pub fn head(&mut self, s: &mut TcpStream) -> io::Result<Option<Vec<u8>>> {
        loop {
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let rest = self.buf.split_off(end + 4);
                return Ok(Some(std::mem::replace(&mut self.buf, rest)));
            }
            if self.buf.len() > cacheoff_http::MAX_HEAD_LEN {
                return Err(bad("head too large"));
            }
            if self.fill(s)? == 0 {
                return match self.buf.is_empty() {
                    true => Ok(None),
                    false => Err(bad("connection closed inside a head")),
                };
            }
        }
    }

    fn exact(&mut self, s: &mut TcpStream, n: usize) -> io::Result<Vec<u8>> {
        while self.buf.len() < n {
            if self.fill(s)? == 0 {
                return Err(bad("connection closed inside a body"));
            }
        }
        let rest = self.buf.split_off(n);
        Ok(std::mem::replace(&mut self.buf, rest))
    }

    fn line(&mut self, s: &mut TcpStream) -> io::Result<String> {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = self.exact(s, end + 2)?;
                return Ok(String::from_utf8_lossy(&line[..end]).into_owned());
            }
            if self.fill(s)? == 0 {
                return Err(bad("connection closed inside a chunk"));
            }
        }
    }

    /// A body framed as `h` says; `to_end` when neither length nor
    /// chunking is given and the message runs to the connection's end.
    pub fn body(&mut self, s: &mut TcpStream, h: &Headers, to_end: bool) -> io::Result<Vec<u8>> {
        let chunked = h.iter().any(|(n, v)| {
            n.eq_ignore_ascii_case("transfer-encoding")
                && cacheoff_http::has_token(v.as_bytes(), "chunked")
        });
        if chunked {
            let mut out = Vec::new();
            loop {
                let line = self.line(s)?;
                let size = line.split(';').next().unwrap_or("").trim();
                let size = usize::from_str_radix(size, 16).map_err(|_| bad("bad chunk size"))?;
                if size == 0 {
                    // Trailer lines up to the empty one.
                    while !self.line(s)?.is_empty() {}
                    return Ok(out);
                }
                out.extend(self.exact(s, size)?);
                self.exact(s, 2)?;
            }
        }
        if let Some(len) = header(h, "content-length") {
            let len = len.trim().parse().map_err(|_| bad("bad Content-Length"))?;
            return self.exact(s, len);
        }
        if !to_end {
            return Ok(Vec::new());
        }
        while self.fill(s)? > 0 {}
        Ok(std::mem::take(&mut self.buf))
    }
}

/// Header lines of a parsed head.
pub fn lines(h: &[httparse::Header<'_>]) -> Headers {
    h.iter()
        .map(|h| {
            (
                h.name.to_string(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect()
}

/// Now, in Unix seconds.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// An HTTP date `offset` seconds from now.
pub fn date(offset: i64) -> String {
    cacheoff_http::date::format(now() + offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    /// A connection whose peer has written `bytes` and closed.
    fn fed(bytes: &[u8]) -> TcpStream {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut w = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (r, _) = l.accept().unwrap();
        w.write_all(bytes).unwrap();
        r
    }

    fn hs(list: &[(&str, &str)]) -> Headers {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_chunked_body_is_decoded_and_the_next_head_kept() {
        let mut s =
            fed(b"HTTP/1.1 200 OK\r\n\r\n3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\nNEXT\r\n\r\n");
        let mut r = Reader::default();
        assert_eq!(r.head(&mut s).unwrap().unwrap(), b"HTTP/1.1 200 OK\r\n\r\n");
        let body = r.body(&mut s, &hs(&[("Transfer-Encoding", "chunked")]), true);
        assert_eq!(body.unwrap(), b"abcde");
        assert_eq!(r.head(&mut s).unwrap().unwrap(), b"NEXT\r\n\r\n");
    }

    #[test]
    fn bodies_by_length_by_close_and_none() {
        let mut s = fed(b"0123456789");
        let mut r = Reader::default();
        let four = r.body(&mut s, &hs(&[("Content-Length", "4")]), true);
        assert_eq!(four.unwrap(), b"0123");
        assert_eq!(r.body(&mut s, &hs(&[]), false).unwrap(), b"");
        assert_eq!(r.body(&mut s, &hs(&[]), true).unwrap(), b"456789");
        assert!(r.head(&mut s).unwrap().is_none());
    }

    #[test]
    fn a_body_cut_short_is_an_error() {
        let mut s = fed(b"abc");
        let mut r = Reader::default();
        assert!(r
            .body(&mut s, &hs(&[("Content-Length", "10")]), true)
            .is_err());
    }
}
