//! The faults that only mangle bytes: request-level ones that send no
//! real reply ([`misbehave`]), and those that damage a hit's body or its
//! delivery ([`on_hit`], [`deliver`]). A damaged body is still framed as
//! the client's framing says, so each fault reads the same whatever the
//! `--reply-framing`.

use crate::decision::{Decision, Failure};
use crate::fault::{Fault, Faults};
use crate::xact::Done;
use crate::Shared;
use bytes::Bytes;
use std::borrow::Cow;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Request-level faults: a reply that is no reply.
pub(crate) async fn misbehave(s: &mut TcpStream, sh: &Shared) -> Option<Done> {
    let faults = &sh.cfg.faults;
    let (status, out): (u16, Vec<u8>) = if faults.strikes(Fault::Drop) {
        // Hold the request until the client gives up.
        hold(s, sh.cfg.client_idle_timeout).await;
        (0, Vec::new())
    } else if faults.strikes(Fault::Garbage) {
        (0, b"\x16\x03\x01 this is not HTTP at all\r\n\r\n".to_vec())
    } else if faults.strikes(Fault::HugeHeader) {
        let mut out = b"HTTP/1.1 200 OK\r\nX-Padding: ".to_vec();
        out.resize(out.len() + 100 * 1024, b'a');
        out.extend_from_slice(b"\r\nContent-Length: 0\r\n\r\n");
        (200, out)
    } else {
        return None;
    };
    let _ = s.write_all(&out).await;
    Some(Done::own(
        Decision::Error(Failure::Fault),
        status,
        out.len() as u64,
    ))
}

/// Waits until the client sends something or closes, or `limit` passes.
async fn hold(s: &mut TcpStream, limit: Duration) {
    let mut one = [0u8; 1];
    let _ = tokio::time::timeout(limit, s.read(&mut one)).await;
}

/// How a hit's bytes leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    Whole,
    /// Half of the body, then the connection ends (a reset, or a FIN).
    CutHalfway {
        reset: bool,
    },
    /// Half of the body, then nothing with the connection left open.
    StallHalfway,
    /// One byte every 50 ms.
    Drip,
}

/// What the faults make of a hit with a body.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Damage<'a> {
    /// The body as sent, announced as the whole.
    pub body: Cow<'a, [u8]>,
    /// A header line to add.
    pub extra_header: Option<&'static [u8]>,
    pub delivery: Delivery,
}

thread_local! {
    /// The last body a worker served, for the wrong-object fault.
    static LAST_BODY: std::cell::RefCell<Bytes> = const { std::cell::RefCell::new(Bytes::new()) };
}

/// Decides which body fault, if any, strikes this hit, and what it sends.
/// One fault at most: they are drawn in a fixed order, the first to
/// strike wins.
pub(crate) fn on_hit<'a>(faults: &Faults, body: &'a [u8]) -> Damage<'a> {
    let half = body.len() / 2;
    let previous = LAST_BODY.with(|b| b.replace(Bytes::copy_from_slice(body)));
    let damage = |body, delivery| Damage {
        body,
        extra_header: None,
        delivery,
    };
    if faults.strikes(Fault::FlipByte) {
        let mut flipped = body.to_vec();
        if let Some(b) = flipped.get_mut(half) {
            *b ^= 0x01;
        }
        return damage(Cow::Owned(flipped), Delivery::Whole);
    }
    if faults.strikes(Fault::WrongObject) && !previous.is_empty() {
        let other = previous.iter().cycle().take(body.len()).copied().collect();
        return damage(Cow::Owned(other), Delivery::Whole);
    }
    if faults.strikes(Fault::Truncate) {
        // A consistent message that is too short: its length says so.
        return damage(Cow::Borrowed(&body[..half]), Delivery::Whole);
    }
    let reset = faults.strikes(Fault::Reset);
    if reset || faults.strikes(Fault::Close) {
        return damage(Cow::Borrowed(body), Delivery::CutHalfway { reset });
    }
    if faults.strikes(Fault::Stall) {
        return damage(Cow::Borrowed(body), Delivery::StallHalfway);
    }
    if faults.strikes(Fault::EmptyBody) {
        return damage(Cow::Borrowed(&[]), Delivery::Whole);
    }
    if faults.strikes(Fault::BadMd5) {
        // After the stored headers: of two Content-MD5s the last counts.
        return Damage {
            extra_header: Some(b"Content-MD5: AAAAAAAAAAAAAAAAAAAAAA==\r\n"),
            ..damage(Cow::Borrowed(body), Delivery::Whole)
        };
    }
    if faults.strikes(Fault::Drip) {
        return damage(Cow::Borrowed(body), Delivery::Drip);
    }
    damage(Cow::Borrowed(body), Delivery::Whole)
}

/// Writes `out` (a head of `head_len` bytes, then the framed body) as
/// `delivery` says; an error when the client did not get it whole.
pub(crate) async fn deliver(
    s: &mut TcpStream,
    out: &[u8],
    head_len: usize,
    delivery: Delivery,
    client_idle_timeout: Duration,
) -> std::io::Result<()> {
    let halfway = head_len + (out.len() - head_len) / 2;
    match delivery {
        Delivery::Whole => s.write_all(out).await,
        Delivery::CutHalfway { reset } => {
            s.write_all(&out[..halfway]).await?;
            if reset {
                // SO_LINGER 0: closing sends a reset, not a FIN.
                let _ = socket2::SockRef::from(&*s).set_linger(Some(Duration::ZERO));
            }
            Err(std::io::ErrorKind::ConnectionAborted.into())
        }
        Delivery::StallHalfway => {
            s.write_all(&out[..halfway]).await?;
            hold(s, client_idle_timeout).await;
            Err(std::io::ErrorKind::TimedOut.into())
        }
        Delivery::Drip => {
            for b in out {
                s.write_all(std::slice::from_ref(b)).await?;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(fault: Fault) -> Faults {
        Faults::new(vec![(fault, 1.0)])
    }

    #[test]
    fn body_faults_change_what_is_sent_not_how() {
        let body = b"0123456789";
        let d = on_hit(&with(Fault::FlipByte), body);
        assert_eq!(&*d.body, b"0123446789");
        assert_eq!(d.delivery, Delivery::Whole);
        assert_eq!(&*on_hit(&with(Fault::Truncate), body).body, b"01234");
        assert!(on_hit(&with(Fault::EmptyBody), body).body.is_empty());
        let md5 = on_hit(&with(Fault::BadMd5), body);
        assert_eq!(&*md5.body, body);
        assert!(md5.extra_header.unwrap().starts_with(b"Content-MD5: "));
        // An empty body has no middle byte to flip.
        assert!(on_hit(&with(Fault::FlipByte), b"").body.is_empty());
    }

    #[test]
    fn the_wrong_object_is_the_previous_one_cut_or_repeated_to_length() {
        let f = with(Fault::WrongObject);
        std::thread::spawn(move || {
            // The first hit of a worker has no previous object.
            assert_eq!(&*on_hit(&f, b"first").body, b"first");
            assert_eq!(&*on_hit(&f, b"second!!").body, b"firstfir");
            assert_eq!(&*on_hit(&f, b"3").body, b"s");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn delivery_faults_keep_the_body() {
        let body = b"abcd";
        for (fault, delivery) in [
            (Fault::Reset, Delivery::CutHalfway { reset: true }),
            (Fault::Close, Delivery::CutHalfway { reset: false }),
            (Fault::Stall, Delivery::StallHalfway),
            (Fault::Drip, Delivery::Drip),
        ] {
            let d = on_hit(&with(fault), body);
            assert_eq!((&*d.body, d.delivery), (&body[..], delivery), "{fault:?}");
        }
        let none = on_hit(&Faults::default(), body);
        assert_eq!((&*none.body, none.delivery), (&body[..], Delivery::Whole));
    }
}
