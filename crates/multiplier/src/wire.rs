//! Socket steps both paths share: connecting within a timeout, reading a
//! reply head within the first-byte and idle timeouts, a small pool of
//! idle keep-alive connections.

use cacheoff_http::response::parse_response_within;
use cacheoff_http::{HttpError, ResponseHead};
use std::cell::RefCell;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// Why a reply could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WireError {
    #[error("connect: {0}")]
    Connect(std::io::Error),
    #[error("connect timed out")]
    ConnectTimeout,
    #[error("no first byte within {0:?}")]
    FirstByteTimeout(Duration),
    #[error("no bytes for {0:?}")]
    IdleTimeout(Duration),
    #[error("no whole reply within the copy deadline of {0:?}")]
    Deadline(Duration),
    #[error("connection closed before the reply head ended")]
    Closed,
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Http(#[from] HttpError),
}

impl WireError {
    /// A timeout of any kind (counted as the `timeout` mismatch).
    pub(crate) fn is_timeout(&self) -> bool {
        matches!(
            self,
            WireError::ConnectTimeout
                | WireError::FirstByteTimeout(_)
                | WireError::IdleTimeout(_)
                | WireError::Deadline(_)
        )
    }
}

pub(crate) async fn connect(addr: SocketAddr, timeout: Duration) -> Result<TcpStream, WireError> {
    match tokio::time::timeout(timeout, TcpStream::connect(addr)).await {
        Ok(Ok(s)) => {
            let _ = s.set_nodelay(true);
            Ok(s)
        }
        Ok(Err(e)) => Err(WireError::Connect(e)),
        Err(_) => Err(WireError::ConnectTimeout),
    }
}

/// Reads once into `buf` within `limit`; 0 at end of stream.
pub(crate) async fn read_some(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    limit: Duration,
    timeout_err: WireError,
) -> Result<usize, WireError> {
    buf.reserve(16 * 1024);
    match tokio::time::timeout(limit, s.read_buf(buf)).await {
        Ok(r) => Ok(r?),
        Err(_) => Err(timeout_err),
    }
}

/// Timeouts of one reply.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ReplyTimeouts {
    pub first_byte: Duration,
    pub idle: Duration,
    pub max_header: usize,
}

/// Reads until `buf` holds a whole reply head, which is parsed (headers
/// kept). `first_byte_at` is set when the first byte arrives.
pub(crate) async fn read_head(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    head_request: bool,
    t: ReplyTimeouts,
    first_byte_at: &mut Option<Instant>,
) -> Result<ResponseHead, WireError> {
    let mut scanner = cacheoff_http::HeadScanner::new();
    loop {
        if let Some(n) = scanner.scan_within(buf, t.max_header)? {
            return match parse_response_within(&buf[..n], head_request, true, t.max_header)? {
                // 1xx interim replies are dropped: the final one follows.
                Some(h) if (100..200).contains(&h.status) => {
                    buf.drain(..h.head_len);
                    scanner.reset();
                    continue;
                }
                Some(h) => Ok(h),
                None => Err(HttpError::Malformed("incomplete head".into()).into()),
            };
        }
        let (limit, err) = if first_byte_at.is_none() {
            (t.first_byte, WireError::FirstByteTimeout(t.first_byte))
        } else {
            (t.idle, WireError::IdleTimeout(t.idle))
        };
        if read_some(s, buf, limit, err).await? == 0 {
            return Err(WireError::Closed);
        }
        first_byte_at.get_or_insert_with(Instant::now);
    }
}

/// Idle keep-alive connections to one peer, used by one thread.
pub(crate) struct Pool {
    idle: RefCell<Vec<TcpStream>>,
    max_idle: usize,
}

impl Pool {
    pub(crate) fn new(max_idle: usize) -> Pool {
        Pool {
            idle: RefCell::new(Vec::new()),
            max_idle,
        }
    }

    /// The most recently used idle connection.
    pub(crate) fn take(&self) -> Option<TcpStream> {
        self.idle.borrow_mut().pop()
    }

    pub(crate) fn put(&self, s: TcpStream) {
        let mut idle = self.idle.borrow_mut();
        if idle.len() < self.max_idle {
            idle.push(s);
        }
    }
}
