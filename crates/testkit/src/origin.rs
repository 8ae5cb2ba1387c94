//! The scripted origin for tests: `cacheoff_conform`'s, with one script
//! for every path and the replies tests need beside the structured one
//! ([`Reply::new`], [`binary`] for a body of any bytes): exact bytes, at
//! a chosen pace, or never.

pub use cacheoff_conform::{Origin, Reply, Seen};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An origin on a loopback port of its own answering every path with
/// `script` (which reads the path, method, headers and body it was sent
/// from its [`Seen`]).
pub fn origin(script: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Origin {
    origin_on("127.0.0.1:0".parse().unwrap(), script)
}

/// [`origin`] listening on `addr`.
pub fn origin_on(
    addr: SocketAddr,
    script: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> Origin {
    let o = Origin::bind(addr).unwrap_or_else(|e| panic!("an origin on {addr}: {e}"));
    o.fallback(Arc::new(script));
    o
}

/// [`Reply::new`] with a body of any bytes (an image, a large object):
/// `Date` and `Content-Length` added unless given, no body for `HEAD`.
pub fn binary(status: u16, headers: &[(&str, &str)], body: impl Into<Vec<u8>>) -> Reply {
    Reply::Send {
        status,
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect(),
        body: body.into(),
        delay: Duration::ZERO,
    }
}

/// These bytes exactly, in one write (a head the test wrote, a malformed
/// reply, interim replies before the final one).
pub fn raw(bytes: impl Into<Vec<u8>>) -> Reply {
    pieces(vec![bytes.into()])
}

/// These bytes, then the connection closes: a reply delimited by its
/// close, or one cut short.
pub fn raw_and_close(bytes: impl Into<Vec<u8>>) -> Reply {
    let bytes = bytes.into();
    Reply::write(move |s| {
        s.write_all(&bytes)?;
        Err(io::ErrorKind::ConnectionAborted.into())
    })
}

/// Pause between [`pieces`], long enough that they arrive in separate
/// reads.
const PIECE_GAP: Duration = Duration::from_millis(15);

/// The pieces written one after another with a short pause between them;
/// no pieces: the connection is closed unanswered.
pub fn pieces(pieces: Vec<Vec<u8>>) -> Reply {
    if pieces.is_empty() {
        return Reply::Close;
    }
    let mut first = true;
    paced(
        pieces
            .into_iter()
            .map(|p| {
                let gap = if first { Duration::ZERO } else { PIECE_GAP };
                first = false;
                (gap, p)
            })
            .collect(),
    )
}

/// Each piece written after its own pause (a first byte late, the rest
/// later still).
pub fn paced(pieces: Vec<(Duration, Vec<u8>)>) -> Reply {
    Reply::write(move |s| {
        for (pause, piece) in &pieces {
            std::thread::sleep(*pause);
            s.write_all(piece)?;
        }
        Ok(())
    })
}

/// Never answers: reads and drops what comes (further requests too) until
/// the peer closes or `limit` passes, then closes.
pub fn hold(limit: Duration) -> Reply {
    Reply::write(move |s| {
        let started = Instant::now();
        let mut buf = [0u8; 16 * 1024];
        s.set_read_timeout(Some(Duration::from_millis(200)))?;
        while started.elapsed() < limit {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => break,
            }
        }
        Err(io::ErrorKind::ConnectionAborted.into())
    })
}

/// `head`, then `piece` every `gap` until the peer goes or `limit`
/// passes: a body or a run of interim replies that never ends.
pub fn endless(head: &[u8], piece: &[u8], gap: Duration, limit: Duration) -> Reply {
    let (head, piece) = (head.to_vec(), piece.to_vec());
    Reply::write(move |s| {
        let started = Instant::now();
        s.write_all(&head)?;
        while started.elapsed() < limit {
            s.write_all(&piece)?;
            std::thread::sleep(gap);
        }
        Err(io::ErrorKind::TimedOut.into())
    })
}

/// `body` as a chunked body in chunks of `size` bytes, with its last
/// chunk (`crates/http`'s encoder).
pub fn chunked(body: &[u8], size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + body.len() / size.max(1) * 8 + 5);
    for piece in body.chunks(size.max(1)) {
        cacheoff_http::chunked::write_chunk(&mut out, piece);
    }
    cacheoff_http::chunked::write_chunk(&mut out, b"");
    out
}
