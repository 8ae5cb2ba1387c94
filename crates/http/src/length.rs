//! The body-length fields of one head (RFC 9112 §6): every
//! `Transfer-Encoding` and `Content-Length` line is folded into one
//! [`LengthFields`], so no later line can silently replace an earlier one
//! (the request-smuggling primitive this module exists to close).

use crate::HttpError;

/// `Transfer-Encoding` and `Content-Length` over all lines of a head.
#[derive(Debug, Default)]
pub(crate) struct LengthFields {
    /// Some `Transfer-Encoding` line was present (even an empty one).
    te_present: bool,
    /// Non-empty codings listed, over all lines.
    codings: usize,
    chunked_count: usize,
    last_is_chunked: bool,
    /// A coding that is not a token, or `chunked` with parameters.
    malformed: bool,
    /// The first coding other than `chunked`.
    other: Option<String>,
    content_length: Option<u64>,
}

/// How a request's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RequestBody {
    Length(Option<u64>),
    Chunked,
}

/// How a response's body is delimited, before the status and method say
/// there is none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResponseBody {
    pub chunked: bool,
    pub length: Option<u64>,
    /// Transfer-Encoding overrode a Content-Length.
    pub conflicting: bool,
    /// The framing is not trustworthy enough to reuse the connection.
    pub no_reuse: bool,
}

impl LengthFields {
    pub fn content_length(&mut self, value: &[u8]) -> Result<(), HttpError> {
        // RFC 9110 §8.6 allows a list of one repeated value; a list of
        // different ones is as ambiguous as differing lines.
        for item in value.split(|&b| b == b',') {
            let n = parse_length(trim_ows(item)).ok_or(HttpError::BadContentLength)?;
            if self.content_length.is_some_and(|m| m != n) {
                return Err(HttpError::AmbiguousFraming);
            }
            self.content_length = Some(n);
        }
        Ok(())
    }

    pub fn transfer_encoding(&mut self, value: &[u8]) {
        self.te_present = true;
        for item in value.split(|&b| b == b',') {
            let item = trim_ows(item);
            // Empty list elements are ignored (RFC 9110 §5.6.1).
            if item.is_empty() {
                continue;
            }
            let (name, params) = match item.iter().position(|&b| b == b';') {
                Some(i) => (trim_ows(&item[..i]), true),
                None => (item, false),
            };
            self.codings += 1;
            let chunked = name.eq_ignore_ascii_case(b"chunked");
            // chunked takes no parameters: with some it is not the coding
            // a recipient can decode.
            self.last_is_chunked = chunked && !params;
            if chunked {
                self.chunked_count += 1;
                self.malformed |= params;
            } else {
                self.malformed |= !is_token(name);
                if self.other.is_none() {
                    self.other = Some(String::from_utf8_lossy(name).into_owned());
                }
            }
        }
    }

    /// A request's framing (RFC 9112 §6.1, §6.3): with Transfer-Encoding
    /// the body must be chunked exactly once, last, and nothing else;
    /// Transfer-Encoding with Content-Length is refused whatever the coding.
    pub fn request(self, minor: u8) -> Result<RequestBody, HttpError> {
        if !self.te_present {
            return Ok(RequestBody::Length(self.content_length));
        }
        if self.content_length.is_some() {
            return Err(HttpError::AmbiguousFraming);
        }
        // HTTP/1.0 has no transfer codings: its framing is faulty (§6.1).
        if minor == 0 || self.malformed || self.codings == 0 {
            return Err(HttpError::BadTransferEncoding);
        }
        if self.chunked_count > 1 || (self.chunked_count == 1 && !self.last_is_chunked) {
            return Err(HttpError::BadTransferEncoding);
        }
        // Only chunked is decoded: gzip and the like (RFC 9112 §7) and
        // unknown codings alike get 501 (§6.1's SHOULD).
        if let Some(c) = self.other {
            return Err(HttpError::UnsupportedTransferCoding(c));
        }
        Ok(RequestBody::Chunked)
    }

    /// A response's framing (RFC 9112 §6.3): chunked if it is the final
    /// coding, else the body runs until close; Transfer-Encoding beats
    /// Content-Length, but such a reply (or HTTP/1.0 with codings) leaves
    /// the connection unfit for reuse.
    pub fn response(self, minor: u8) -> Result<ResponseBody, HttpError> {
        if !self.te_present {
            return Ok(ResponseBody {
                chunked: false,
                length: self.content_length,
                conflicting: false,
                no_reuse: false,
            });
        }
        // Decoding chunked once would leave chunk framing in the body.
        if self.chunked_count > 1 {
            return Err(HttpError::BadTransferEncoding);
        }
        let conflicting = self.content_length.is_some();
        Ok(ResponseBody {
            chunked: self.last_is_chunked,
            length: None,
            conflicting,
            no_reuse: conflicting || minor == 0,
        })
    }
}

/// A decimal Content-Length: digits only, no sign, no overflow.
fn parse_length(v: &[u8]) -> Option<u64> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    v.iter().try_fold(0u64, |a, &d| {
        a.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

/// Strips optional white space (SP, HTAB: RFC 9110 §5.6.3).
fn trim_ows(v: &[u8]) -> &[u8] {
    let ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = v.iter().position(|b| !ows(b)).unwrap_or(v.len());
    let end = v.iter().rposition(|b| !ows(b)).map_or(start, |i| i + 1);
    &v[start..end]
}

/// RFC 9110 §5.6.2 `token`.
fn is_token(v: &[u8]) -> bool {
    !v.is_empty()
        && v.iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(te: &[&[u8]], cl: Option<&[u8]>) -> Result<RequestBody, HttpError> {
        let mut f = LengthFields::default();
        if let Some(v) = cl {
            f.content_length(v)?;
        }
        te.iter().for_each(|v| f.transfer_encoding(v));
        f.request(1)
    }

    #[test]
    fn request_codings() {
        use HttpError::{BadTransferEncoding as Bad, UnsupportedTransferCoding as Unsup};
        let chunked = Ok(RequestBody::Chunked);
        assert_eq!(request(&[b"chunked"], None), chunked);
        assert_eq!(request(&[b" \tChunKed\t "], None), chunked);
        assert_eq!(request(&[b"chunked, "], None), chunked);
        assert_eq!(request(&[b"", b"chunked"], None), chunked);
        assert_eq!(request(&[b"chunked, chunked"], None), Err(Bad));
        assert_eq!(request(&[b"chunked", b"chunked"], None), Err(Bad));
        assert_eq!(request(&[b"chunked, identity"], None), Err(Bad));
        assert_eq!(request(&[b"chunked", b"identity"], None), Err(Bad));
        assert_eq!(request(&[b""], None), Err(Bad));
        assert_eq!(request(&[b" , "], None), Err(Bad));
        assert_eq!(request(&[b"\"chunked\""], None), Err(Bad));
        assert_eq!(request(&[b"chunked;x=1"], None), Err(Bad));
        assert_eq!(request(&[b"xchunked"], None), Err(Unsup("xchunked".into())));
        assert_eq!(
            request(&[b"gzip, chunked"], None),
            Err(Unsup("gzip".into()))
        );
        assert_eq!(
            request(&[b"gzip", b"chunked"], None),
            Err(Unsup("gzip".into()))
        );
        assert_eq!(request(&[b"identity"], None), Err(Unsup("identity".into())));
        for te in [&b"chunked"[..], b"xchunked", b"", b"identity"] {
            assert_eq!(request(&[te], Some(b"4")), Err(HttpError::AmbiguousFraming));
        }
        let mut f = LengthFields::default();
        f.transfer_encoding(b"chunked");
        assert_eq!(f.request(0), Err(Bad));
    }

    #[test]
    fn content_lengths() {
        assert_eq!(request(&[], Some(b"5")), Ok(RequestBody::Length(Some(5))));
        assert_eq!(
            request(&[], Some(b"5, 5")),
            Ok(RequestBody::Length(Some(5)))
        );
        assert_eq!(
            request(&[], Some(b"5, 6")),
            Err(HttpError::AmbiguousFraming)
        );
        for bad in [
            &b""[..],
            b"+5",
            b"-5",
            b"5,",
            b"0x5",
            b"5 5",
            b"18446744073709551616",
        ] {
            assert_eq!(request(&[], Some(bad)), Err(HttpError::BadContentLength));
        }
        assert_eq!(parse_length(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_length(b"000000000000000000000007"), Some(7));
    }

    #[test]
    fn response_codings() {
        let response = |te: &[&[u8]], cl: Option<&[u8]>, minor| {
            let mut f = LengthFields::default();
            if let Some(v) = cl {
                f.content_length(v).unwrap();
            }
            te.iter().for_each(|v| f.transfer_encoding(v));
            f.response(minor)
        };
        let r = response(&[b"gzip", b"chunked"], None, 1).unwrap();
        assert!(r.chunked && !r.conflicting && !r.no_reuse);
        let r = response(&[b"chunked", b"gzip"], None, 1).unwrap();
        assert!(!r.chunked && r.length.is_none());
        let r = response(&[b"chunked"], Some(b"9"), 1).unwrap();
        assert!(r.chunked && r.conflicting && r.no_reuse && r.length.is_none());
        let r = response(&[b"chunked"], None, 0).unwrap();
        assert!(r.chunked && r.no_reuse);
        assert!(!response(&[b"\"chunked\""], None, 1).unwrap().chunked);
        assert_eq!(
            response(&[b"chunked", b"chunked"], None, 1),
            Err(HttpError::BadTransferEncoding)
        );
    }
}
