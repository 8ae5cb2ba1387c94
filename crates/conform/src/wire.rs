//! Reading HTTP/1.1 messages off a blocking `TcpStream`, for both the
//! origin (requests) and the client (responses), with the house codec:
//! heads found by `cacheoff_http`'s `HeadScanner` and parsed by its
//! request and response parsers (every framing rule of RFC 9112 §6 is
//! theirs), chunked bodies through its `ChunkedDecoder`. Only the
//! blocking reads are this module's.

use cacheoff_http::chunked::ChunkedDecoder;
use cacheoff_http::request::parse_request;
use cacheoff_http::response::parse_response;
use cacheoff_http::{Framing, HeadScanner, HttpError, RequestHead, ResponseHead, MAX_HEAD_LEN};
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

/// Header lines of a parsed head, values as text.
pub fn lines(h: &[(String, Vec<u8>)]) -> Headers {
    h.iter()
        .map(|(n, v)| (n.clone(), String::from_utf8_lossy(v).into_owned()))
        .collect()
}

/// Bytes read from a connection that belong to the next message.
#[derive(Default)]
pub struct Reader {
    buf: Vec<u8>,
    scan: HeadScanner,
    /// The last head read, as it came.
    last: Vec<u8>,
}

fn bad(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}

/// Why the codec refused a `what` ("request", "response") message, in
/// the words the suite's log used before the codec read for it, where
/// they still apply.
fn refused(e: HttpError, what: &str) -> io::Error {
    match e {
        HttpError::HeadTooLarge(_) => bad("head too large"),
        HttpError::BadContentLength => bad("bad Content-Length"),
        HttpError::Malformed(_) | HttpError::TooManyHeaders(_) => {
            bad(&format!("unparsable {what} head"))
        }
        e => bad(&e.to_string()),
    }
}

impl Reader {
    fn fill(&mut self, s: &mut TcpStream) -> io::Result<usize> {
        let mut chunk = [0u8; 16 * 1024];
        let n = s.read(&mut chunk)?;
        self.buf.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// The next whole head's bytes; `None` if the connection ended before
    /// its first byte.
    fn head(&mut self, s: &mut TcpStream, what: &str) -> io::Result<Option<Vec<u8>>> {
        loop {
            let found = self.scan.scan_within(&self.buf, MAX_HEAD_LEN);
            if let Some(end) = found.map_err(|e| refused(e, what))? {
                self.scan.reset();
                let rest = self.buf.split_off(end);
                return Ok(Some(std::mem::replace(&mut self.buf, rest)));
            }
            if self.fill(s)? == 0 {
                return match self.buf.is_empty() {
                    true => Ok(None),
                    false => Err(bad("connection closed inside a head")),
                };
            }
        }
    }

    /// The last head [`Reader::request`] or [`Reader::response`] read,
    /// byte for byte.
    pub fn last_head(&self) -> &[u8] {
        &self.last
    }

    /// Takes the bytes read past the last message.
    pub fn take_buffered(&mut self) -> Vec<u8> {
        self.scan.reset();
        std::mem::take(&mut self.buf)
    }

    /// The next request head, every header kept; `None` if the
    /// connection ended first.
    pub fn request(&mut self, s: &mut TcpStream) -> io::Result<Option<RequestHead>> {
        let Some(head) = self.head(s, "request")? else {
            return Ok(None);
        };
        self.last = head;
        let head = &self.last;
        match parse_request(head, true) {
            Ok(Some(h)) => Ok(Some(h)),
            Ok(None) => Err(bad("unparsable request head")),
            Err(e) => Err(refused(e, "request")),
        }
    }

    /// The next response head, every header kept; `head_request`: it
    /// answers a HEAD (so it has no body, whatever it says).
    pub fn response(
        &mut self,
        s: &mut TcpStream,
        head_request: bool,
    ) -> io::Result<Option<ResponseHead>> {
        let Some(head) = self.head(s, "response")? else {
            return Ok(None);
        };
        self.last = head;
        let head = &self.last;
        match parse_response(head, head_request, true) {
            Ok(Some(h)) => Ok(Some(h)),
            Ok(None) => Err(bad("unparsable response head")),
            Err(e) => Err(refused(e, "response")),
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

    fn chunked(&mut self, s: &mut TcpStream) -> io::Result<Vec<u8>> {
        let mut decoder = ChunkedDecoder::default();
        let mut out = Vec::new();
        loop {
            let used = decoder
                .decode(&self.buf, |d| out.extend_from_slice(d))
                .map_err(|e| refused(e, "chunked"))?;
            self.buf.drain(..used);
            if decoder.is_done() {
                return Ok(out);
            }
            if self.fill(s)? == 0 {
                return Err(bad("connection closed inside a chunk"));
            }
        }
    }

    /// A body delimited as `framing` says (a request's from
    /// [`request_framing`]).
    pub fn body(&mut self, s: &mut TcpStream, framing: Framing) -> io::Result<Vec<u8>> {
        match framing {
            Framing::Empty => Ok(Vec::new()),
            Framing::Length(n) => {
                let n = usize::try_from(n).map_err(|_| bad("bad Content-Length"))?;
                self.exact(s, n)
            }
            Framing::Chunked => self.chunked(s),
            Framing::UntilClose => {
                while self.fill(s)? > 0 {}
                Ok(std::mem::take(&mut self.buf))
            }
        }
    }
}

/// How a parsed request's body is delimited: chunked, by its length, or
/// absent (a request never runs to the connection's end).
pub fn request_framing(h: &RequestHead) -> Framing {
    match (h.chunked, h.content_length) {
        (true, _) => Framing::Chunked,
        (false, Some(n)) => Framing::Length(n),
        (false, None) => Framing::Empty,
    }
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

    fn response(r: &mut Reader, s: &mut TcpStream) -> (ResponseHead, io::Result<Vec<u8>>) {
        let h = r.response(s, false).unwrap().unwrap();
        let body = r.body(s, h.framing);
        (h, body)
    }

    #[test]
    fn a_chunked_body_is_decoded_and_the_next_head_kept() {
        let mut s = fed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
              3;x=1\r\nabc\r\n2\r\nde\r\n0\r\nT: 1\r\n\r\n\
              HTTP/1.1 204 No Content\r\nX-N: 2\r\n\r\n");
        let mut r = Reader::default();
        let (h, body) = response(&mut r, &mut s);
        assert_eq!((h.status, h.framing), (200, Framing::Chunked));
        assert_eq!(body.unwrap(), b"abcde");
        let (h, body) = response(&mut r, &mut s);
        assert_eq!(h.status, 204);
        assert_eq!(lines(&h.headers), [("X-N".to_string(), "2".to_string())]);
        assert_eq!(body.unwrap(), b"");
        assert!(r.response(&mut s, false).unwrap().is_none());
    }

    #[test]
    fn bodies_by_length_by_close_and_none() {
        let mut s = fed(b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n0123\
              HTTP/1.1 304 Not Modified\r\nContent-Length: 4\r\n\r\n\
              HTTP/1.0 200 OK\r\n\r\n456789");
        let mut r = Reader::default();
        assert_eq!(response(&mut r, &mut s).1.unwrap(), b"0123");
        assert_eq!(response(&mut r, &mut s).1.unwrap(), b"");
        let (h, body) = response(&mut r, &mut s);
        assert_eq!(
            (h.framing, body.unwrap()),
            (Framing::UntilClose, b"456789".to_vec())
        );
        assert!(r.response(&mut s, false).unwrap().is_none());
    }

    #[test]
    fn a_reply_to_head_has_no_body_whatever_it_says() {
        let mut s = fed(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nHTTP/1.1 200 OK\r\n\r\n");
        let mut r = Reader::default();
        let h = r.response(&mut s, true).unwrap().unwrap();
        assert_eq!(h.framing, Framing::Empty);
        assert_eq!(r.response(&mut s, true).unwrap().unwrap().status, 200);
    }

    #[test]
    fn a_body_cut_short_is_an_error() {
        let mut s = fed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        let e = response(&mut Reader::default(), &mut s).1.unwrap_err();
        assert_eq!(e.to_string(), "connection closed inside a body");
        let mut s = fed(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab");
        let e = response(&mut Reader::default(), &mut s).1.unwrap_err();
        assert_eq!(e.to_string(), "connection closed inside a chunk");
        let mut s = fed(b"HTTP/1.1 200 OK\r\nX: 1");
        let e = Reader::default().response(&mut s, false).unwrap_err();
        assert_eq!(e.to_string(), "connection closed inside a head");
    }

    #[test]
    fn what_the_codec_refuses_is_an_error_in_the_suite_s_words() {
        let refusal = |wire: &[u8]| {
            let mut s = fed(wire);
            let mut r = Reader::default();
            match r.response(&mut s, false) {
                Err(e) => e.to_string(),
                Ok(h) => r.body(&mut s, h.unwrap().framing).unwrap_err().to_string(),
            }
        };
        assert_eq!(
            refusal(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"),
            "bad Content-Length"
        );
        assert_eq!(refusal(b"HTTP/9 OK\r\n\r\n"), "unparsable response head");
        // Two lengths are a smuggling primitive, not a body to guess at.
        assert_eq!(
            refusal(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"),
            HttpError::AmbiguousFraming.to_string()
        );
        // A chunk's data must end with CRLF (RFC 9112 §7.1).
        assert_eq!(
            refusal(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n"),
            HttpError::BadChunk.to_string()
        );
        let mut big = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        big.resize(big.len() + MAX_HEAD_LEN, b'a');
        assert_eq!(refusal(&big), "head too large");
    }

    #[test]
    fn requests_are_read_with_their_bodies_for_the_origin() {
        let mut s = fed(
            b"POST /a?b HTTP/1.1\r\nHost: o\r\nContent-Length: 2\r\n\r\nhi\
              PUT http://o/c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n\
              GET /d HTTP/1.1\r\nHost: o\r\n\r\n",
        );
        let mut r = Reader::default();
        let mut next = || {
            let h = r.request(&mut s).unwrap().unwrap();
            let body = r.body(&mut s, request_framing(&h)).unwrap();
            (h.method.as_str().to_string(), h.path().to_string(), body)
        };
        assert_eq!(next(), ("POST".into(), "/a?b".into(), b"hi".to_vec()));
        assert_eq!(next(), ("PUT".into(), "/c".into(), b"x".to_vec()));
        assert_eq!(next(), ("GET".into(), "/d".into(), Vec::new()));
        assert!(r.request(&mut s).unwrap().is_none());
    }
}
