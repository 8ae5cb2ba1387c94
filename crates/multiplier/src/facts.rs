//! What is compared of a reply ([`Facts`]), and the body walk that yields
//! its length and digest as the bytes pass ([`BodyTracker`]): the client
//! path streams the Collector's body through one, a copy reads its proxy's
//! body through another.

use cacheoff_http::chunked::ChunkedDecoder;
use cacheoff_http::{Framing, HttpError, ResponseHead};
use xxhash_rust::xxh3::Xxh3;

/// Walks one reply body in the pieces it arrives in: how many bytes of
/// each piece belong to it, its decoded length and digest, and whether it
/// ended as its framing says.
pub(crate) struct BodyTracker {
    framing: Framing,
    remaining: u64,
    chunked: ChunkedDecoder,
    hasher: Xxh3,
    len: u64,
    done: bool,
}

impl BodyTracker {
    pub(crate) fn new(framing: Framing) -> BodyTracker {
        let (remaining, done) = match framing {
            Framing::Empty => (0, true),
            Framing::Length(n) => (n, n == 0),
            Framing::Chunked | Framing::UntilClose => (0, false),
        };
        BodyTracker {
            framing,
            remaining,
            chunked: ChunkedDecoder::default(),
            hasher: Xxh3::new(),
            len: 0,
            done,
        }
    }

    /// Takes bytes read after the head; returns how many belong to this
    /// body (the rest would be another message's).
    pub(crate) fn feed(&mut self, input: &[u8]) -> Result<usize, HttpError> {
        if self.done {
            return Ok(0);
        }
        match self.framing {
            Framing::Empty => Ok(0),
            Framing::Length(_) => {
                let n = input
                    .len()
                    .min(self.remaining.try_into().unwrap_or(usize::MAX));
                self.hasher.update(&input[..n]);
                self.len += n as u64;
                self.remaining -= n as u64;
                self.done = self.remaining == 0;
                Ok(n)
            }
            Framing::Chunked => {
                let (hasher, len) = (&mut self.hasher, &mut self.len);
                let used = self.chunked.decode(input, |d| {
                    hasher.update(d);
                    *len += d.len() as u64;
                })?;
                self.done = self.chunked.is_done();
                Ok(used)
            }
            Framing::UntilClose => {
                self.hasher.update(input);
                self.len += input.len() as u64;
                Ok(input.len())
            }
        }
    }

    /// The peer closed the connection: the end of a body delimited by it.
    pub(crate) fn at_eof(&mut self) {
        if self.framing == Framing::UntilClose {
            self.done = true;
        }
    }

    pub(crate) fn done(&self) -> bool {
        self.done
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    pub(crate) fn digest(&self) -> u128 {
        self.hasher.digest128()
    }
}

/// The facts of one reply that the Multiplier compares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    pub status: u16,
    /// Decoded body bytes received.
    pub body_len: u64,
    /// XXH3-128 of the decoded body.
    pub digest: u128,
    /// The body ended as its framing says.
    pub complete: bool,
    pub last_modified: Option<String>,
    pub etag: Option<String>,
    pub expires: Option<String>,
    /// Every `Cache-Control` line, joined.
    pub cache_control: Option<String>,
}

impl Facts {
    /// The head's facts (parsed with its headers kept); the body's come
    /// from [`Facts::with_body`].
    pub(crate) fn of_head(head: &ResponseHead) -> Facts {
        Facts {
            status: head.status,
            last_modified: header(&head.headers, "last-modified"),
            etag: header(&head.headers, "etag"),
            expires: header(&head.headers, "expires"),
            cache_control: header(&head.headers, "cache-control"),
            ..Facts::default()
        }
    }

    pub(crate) fn with_body(mut self, body: &BodyTracker) -> Facts {
        self.body_len = body.len();
        self.digest = body.digest();
        self.complete = body.done();
        self
    }
}

/// Every line of header `name`, trimmed and joined with ", ".
pub(crate) fn header(headers: &[(String, Vec<u8>)], name: &str) -> Option<String> {
    let values: Vec<String> = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| String::from_utf8_lossy(v.trim_ascii()).into_owned())
        .collect();
    (!values.is_empty()).then(|| values.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn digest_of(b: &[u8]) -> u128 {
        xxhash_rust::xxh3::xxh3_128(b)
    }

    #[test]
    fn a_length_body_stops_at_its_length_in_any_pieces() {
        let mut t = BodyTracker::new(Framing::Length(5));
        assert_eq!(t.feed(b"ab").unwrap(), 2);
        assert!(!t.done());
        assert_eq!(t.feed(b"cdeHTTP/1.1").unwrap(), 3);
        assert!(t.done());
        assert_eq!((t.len(), t.digest()), (5, digest_of(b"abcde")));
    }

    #[test]
    fn a_chunked_body_is_measured_decoded() {
        let mut t = BodyTracker::new(Framing::Chunked);
        let wire = b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nnext";
        assert_eq!(t.feed(&wire[..7]).unwrap(), 7);
        assert_eq!(t.feed(&wire[7..]).unwrap(), wire.len() - 7 - 4);
        assert!(t.done());
        assert_eq!((t.len(), t.digest()), (5, digest_of(b"abcde")));
        assert!(BodyTracker::new(Framing::Chunked).feed(b"zz\r\n").is_err());
    }

    #[test]
    fn a_body_until_close_ends_at_eof_and_empty_ones_at_once() {
        let mut t = BodyTracker::new(Framing::UntilClose);
        assert_eq!(t.feed(b"abc").unwrap(), 3);
        assert!(!t.done());
        t.at_eof();
        assert!(t.done());
        assert!(BodyTracker::new(Framing::Empty).done());
        assert!(BodyTracker::new(Framing::Length(0)).done());
        let mut short = BodyTracker::new(Framing::Length(9));
        short.feed(b"abc").unwrap();
        short.at_eof();
        assert!(!short.done());
    }

    #[test]
    fn head_facts_join_repeated_lines() {
        let raw = b"HTTP/1.1 200 OK\r\nCache-Control: max-age=60\r\nCache-Control: public\r\nETag: \"x\"\r\nContent-Length: 0\r\n\r\n";
        let head = cacheoff_http::response::parse_response(raw, false, true)
            .unwrap()
            .unwrap();
        let f = Facts::of_head(&head);
        assert_eq!(f.cache_control.as_deref(), Some("max-age=60, public"));
        assert_eq!(f.etag.as_deref(), Some("\"x\""));
        assert_eq!(f.last_modified, None);
    }
}
