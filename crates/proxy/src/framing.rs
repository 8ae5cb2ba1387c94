//! What the proxy writes around a reply it passes on: which headers go
//! through, how the body is delimited for this client (the
//! `--reply-framing` setting), and the lines it adds itself. Pure
//! functions on byte buffers, shared by hits (`hit`), misses (`relay`)
//! and refusals (`conn`).

use crate::cache_status::CacheStatus;
use crate::config::{ProxyConfig, ReplyFraming, Role};
use crate::fault::Fault;
use crate::lines::{push_header, push_u64};
use crate::upstream::{hop_only, is_one_of, nominated};
use cacheoff_http::chunked::write_chunk;
use cacheoff_http::echo::{COLLECTED_HEADER, COPY_HEADER};
use cacheoff_http::status::{reason, write_status_line};
use cacheoff_http::{Framing, RequestHead, ResponseHead};

/// How one reply's body is delimited on the client connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyFraming {
    /// No body follows (a reply to HEAD, a 204 or 304).
    None,
    Length(u64),
    Chunked,
    /// The body ends when the proxy closes the connection.
    Close,
}

impl BodyFraming {
    /// Decides how a body the origin (or the store) framed as `origin`
    /// goes to a client speaking HTTP/1.`minor`: the setting where the
    /// client can read it, else a length if known, else chunked for
    /// HTTP/1.1 and close-delimited for HTTP/1.0.
    pub(crate) fn choose(setting: ReplyFraming, origin: Framing, minor: u8) -> BodyFraming {
        match (origin, setting) {
            (Framing::Empty, _) => BodyFraming::None,
            (_, ReplyFraming::Close) => BodyFraming::Close,
            (_, ReplyFraming::Chunked) if minor >= 1 => BodyFraming::Chunked,
            (Framing::Length(n), _) => BodyFraming::Length(n),
            _ if minor >= 1 => BodyFraming::Chunked,
            _ => BodyFraming::Close,
        }
    }

    /// Decides whether the client connection can carry another request
    /// after a reply framed so.
    pub(crate) fn keeps_alive(self, setting: ReplyFraming, client_keep_alive: bool) -> bool {
        client_keep_alive && self != BodyFraming::Close && setting != ReplyFraming::Close
    }

    /// Appends `body` as this framing sends it, whole.
    pub(crate) fn encode(self, out: &mut Vec<u8>, body: &[u8]) {
        if self == BodyFraming::Chunked {
            for piece in body.chunks(CHUNK) {
                write_chunk(out, piece);
            }
            out.extend_from_slice(LAST_CHUNK);
        } else {
            out.extend_from_slice(body);
        }
    }
}

/// The end of a chunked body.
pub(crate) const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Chunk size for stored bodies sent chunked: several chunks for a
/// typical object, so clients' decoders meet chunk boundaries.
pub(crate) const CHUNK: usize = 4096;

/// Ends a reply head with the lines the proxy writes itself: the body's
/// framing, `Cache-Status` and `X-Cache` saying how it was `served`
/// (named for the proxy's [`Role`]), `Connection` and the
/// blank line. The claim-hit fault makes a reply not from the store say
/// it was.
pub(crate) fn end_head(
    out: &mut Vec<u8>,
    framing: BodyFraming,
    served: &CacheStatus,
    keep_alive: bool,
    cfg: &ProxyConfig,
) {
    let lie = CacheStatus {
        hit: true,
        ..CacheStatus::default()
    };
    let served = if !served.hit && !served.collapsed && cfg.faults.strikes(Fault::ClaimHit) {
        &lie
    } else {
        served
    };
    match framing {
        BodyFraming::Length(n) => {
            out.extend_from_slice(b"Content-Length: ");
            push_u64(out, n);
            out.extend_from_slice(b"\r\n");
        }
        BodyFraming::Chunked => out.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        BodyFraming::None | BodyFraming::Close => {}
    }
    let role = cfg.role;
    served.push(out, role);
    out.extend_from_slice(b"X-Cache: ");
    out.extend_from_slice(served.x_cache().as_bytes());
    out.extend_from_slice(role.x_cache_suffix().as_bytes());
    out.extend_from_slice(if keep_alive {
        b"\r\nConnection: keep-alive\r\n\r\n".as_slice()
    } else {
        b"\r\nConnection: close\r\n\r\n".as_slice()
    });
}

thread_local! {
    /// A buffer for reply heads, reused by the replies of a worker thread
    /// that do not overlap (most: a reply the socket takes at once).
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// An empty buffer with room for `capacity` bytes, this thread's reused
/// one when no other reply holds it.
pub(crate) fn take_scratch(capacity: usize) -> Vec<u8> {
    let mut v = SCRATCH.take();
    v.clear();
    v.reserve(capacity);
    v
}

/// Gives a buffer from [`take_scratch`] back for the next reply, unless a
/// large reply made it large.
pub(crate) fn give_scratch(v: Vec<u8>) {
    if v.capacity() <= 64 * 1024 {
        SCRATCH.set(v);
    }
}

/// The proxy's own reply to a request it cannot serve (a refusal or an
/// origin failure, as `served` says): a short text body, then the
/// connection closes.
pub(crate) fn error_reply(status: u16, served: &CacheStatus, role: Role) -> Vec<u8> {
    let text = reason(status);
    let mut out = Vec::with_capacity(200);
    write_status_line(&mut out, status);
    served.push(&mut out, role);
    out.extend_from_slice(
        format!(
            "Content-Type: text/plain\r\nContent-Length: {}\r\nX-Cache: MISS\r\nConnection: close\r\n\r\n{text}\n",
            text.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// Reply headers not passed on or stored as they are: hop by hop ones
/// (and those `Connection` names), and the framing and age the proxy
/// writes itself.
fn skip_reply_header(name: &str, nominated: &[String]) -> bool {
    hop_only(name, nominated) || is_one_of(name, &["content-length", "age"])
}

/// The end-to-end header lines of an origin reply, as stored and passed on.
pub(crate) fn end_to_end(head: &ResponseHead) -> Vec<u8> {
    let mut out = Vec::with_capacity(head.head_len);
    let nominated = nominated(&head.headers);
    for (name, value) in &head.headers {
        if !skip_reply_header(name, &nominated) {
            push_header(&mut out, name, value);
        }
    }
    out
}

/// The Collector's stamp on a reply to a request the Multiplier copied
/// (see `cacheoff_http::echo::COLLECTED_HEADER`); other proxies add none.
pub(crate) fn push_collected_stamp(out: &mut Vec<u8>, req: &RequestHead, cfg: &ProxyConfig) {
    if let Some(name) = copy_name(req).filter(|_| cfg.role == Role::Collector) {
        push_header(out, COLLECTED_HEADER, name);
    }
}

/// The Multiplier's name for this client request (`X-Cacheoff-Copy`).
pub(crate) fn copy_name(req: &RequestHead) -> Option<&[u8]> {
    req.headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(COPY_HEADER))
        .map(|(_, v)| v.as_slice())
}

/// The client request a stored reply is kept for, when the Collector
/// stored it only for that request's copies.
pub(crate) fn collected_for(stored_head: &[u8]) -> Option<&[u8]> {
    stored_head.split(|&b| b == b'\n').find_map(|line| {
        let (name, value) = line.split_at(line.iter().position(|&b| b == b':')?);
        name.eq_ignore_ascii_case(COLLECTED_HEADER.as_bytes())
            .then(|| value[1..].trim_ascii())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lines::{content_type_of, without_header};
    use cacheoff_http::response::parse_response;

    #[test]
    fn the_length_setting_keeps_the_origins_framing_where_the_client_can_read_it() {
        let f = |origin, minor| BodyFraming::choose(ReplyFraming::Length, origin, minor);
        assert_eq!(f(Framing::Length(9), 1), BodyFraming::Length(9));
        assert_eq!(f(Framing::Length(9), 0), BodyFraming::Length(9));
        assert_eq!(f(Framing::Chunked, 1), BodyFraming::Chunked);
        assert_eq!(f(Framing::UntilClose, 1), BodyFraming::Chunked);
        // HTTP/1.0 has no chunked coding.
        assert_eq!(f(Framing::Chunked, 0), BodyFraming::Close);
        assert_eq!(f(Framing::Empty, 1), BodyFraming::None);
        assert!(BodyFraming::Length(9).keeps_alive(ReplyFraming::Length, true));
        assert!(!BodyFraming::Close.keeps_alive(ReplyFraming::Length, true));
        assert!(!BodyFraming::Length(9).keeps_alive(ReplyFraming::Length, false));
    }

    #[test]
    fn the_other_settings_apply_to_every_body() {
        let chunked = |origin, minor| BodyFraming::choose(ReplyFraming::Chunked, origin, minor);
        assert_eq!(chunked(Framing::Length(9), 1), BodyFraming::Chunked);
        assert_eq!(chunked(Framing::Length(9), 0), BodyFraming::Length(9));
        assert_eq!(chunked(Framing::Empty, 1), BodyFraming::None);
        let close = |origin| BodyFraming::choose(ReplyFraming::Close, origin, 1);
        assert_eq!(close(Framing::Length(9)), BodyFraming::Close);
        assert_eq!(close(Framing::Empty), BodyFraming::None);
        // Under `close` even a bodiless reply ends the connection.
        assert!(!BodyFraming::None.keeps_alive(ReplyFraming::Close, true));
        assert!(BodyFraming::None.keeps_alive(ReplyFraming::Chunked, true));
    }

    #[test]
    fn bodies_encode_as_framed_and_parse_back() {
        let body: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        for framing in [
            BodyFraming::Length(10_000),
            BodyFraming::Chunked,
            BodyFraming::Close,
        ] {
            let mut out = b"HTTP/1.1 200 OK\r\n".to_vec();
            let cfg = ProxyConfig::new("127.0.0.1:0".parse().unwrap());
            end_head(
                &mut out,
                framing,
                &CacheStatus {
                    hit: true,
                    ..CacheStatus::default()
                },
                framing != BodyFraming::Close,
                &cfg,
            );
            let head_len = out.len();
            framing.encode(&mut out, &body);
            let h = parse_response(&out, false, false).unwrap().unwrap();
            assert_eq!(h.head_len, head_len);
            let got = match h.framing {
                Framing::Chunked => {
                    let mut d = cacheoff_http::chunked::ChunkedDecoder::default();
                    let mut got = Vec::new();
                    let used = d
                        .decode(&out[head_len..], |p| got.extend_from_slice(p))
                        .unwrap();
                    assert!(d.is_done());
                    assert_eq!(used, out.len() - head_len);
                    got
                }
                Framing::Length(n) => out[head_len..head_len + n as usize].to_vec(),
                Framing::UntilClose => {
                    assert!(!h.keep_alive);
                    out[head_len..].to_vec()
                }
                Framing::Empty => panic!("{framing:?}: no body"),
            };
            assert_eq!(got, body, "{framing:?}");
        }
    }

    #[test]
    fn error_replies_say_their_status_and_close() {
        let r = error_reply(504, &CacheStatus::detail("only-if-cached"), Role::Proxy);
        let h = parse_response(&r, false, true).unwrap().unwrap();
        assert_eq!(h.status, 504);
        assert!(!h.keep_alive);
        assert_eq!(&r[h.head_len..], b"Gateway Timeout\n");
        assert!(r.starts_with(b"HTTP/1.1 504 Gateway Timeout\r\n"));
        let cs = h.headers.iter().find(|(n, _)| n == "Cache-Status").unwrap();
        assert_eq!(cs.1, b"cacheoff; detail=only-if-cached");
    }

    #[test]
    fn hop_by_hop_framing_and_age_headers_are_not_passed_on() {
        let raw = b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 3\r\nAge: 5\r\nX-Cacheoff-Echo: 00000000000000ab\r\nContent-Type: text/plain\r\nKeep-Alive: timeout=5\r\n\r\nabc";
        let h = parse_response(raw, false, true).unwrap().unwrap();
        let e2e = end_to_end(&h);
        assert_eq!(
            e2e,
            b"X-Cacheoff-Echo: 00000000000000ab\r\nContent-Type: text/plain\r\n"
        );
        assert_eq!(
            without_header(&e2e, "x-cacheoff-echo"),
            b"Content-Type: text/plain\r\n"
        );
        // A header whose name only starts with the one dropped stays.
        assert_eq!(
            without_header(b"X-Cacheoff-Echoes: 1\r\n", "x-cacheoff-echo"),
            b"X-Cacheoff-Echoes: 1\r\n"
        );
        assert_eq!(
            content_type_of(h.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice()))),
            "text/plain"
        );
    }
}
