//! One HTTP/1.x codec for every role (robot, origin server, proxy),
//! working on byte buffers; no I/O.
//!
//! - [`request`]: write a robot's request; parse a request head
//!   ([`RequestHead`]).
//! - [`response`]: write a server's response head; parse a response head
//!   ([`ResponseHead`]) and its [`Framing`].
//! - [`chunked`]: incremental chunked-body decoder.
//! - [`claim`]: what a reply's headers claim (hit or miss), as read by
//!   the robots and the Multiplier.
//! - [`HeadScanner`]: finds where a head ends across reads, so a reader
//!   parses it once it is whole instead of after every read.
//! - [`HttpError`]: why a message was refused, and the status
//!   ([`HttpError::status`]) a server answers with. Both parsers take
//!   every `Transfer-Encoding` and `Content-Length` line into account
//!   (RFC 9112 §6), so no line can hide another (request smuggling).
//! - [`body`]: object bodies generated from a seed and checked byte for byte
//!   without storing them.
//! - [`date`]: HTTP dates as Unix seconds, formatted and parsed.
//! - [`echo`]: the transaction-id header and its echo, the basis of hit/miss
//!   detection.
//! - [`fields`]: which header fields are hop-by-hop (RFC 9110 §7.6.1,
//!   §11.7; RFC 9111 §3.1; RFC 9113 §8.2.2 for HTTP/2), the names a
//!   `Connection` line lists, and what it says about persistence: one
//!   spelling for the proxy, its cache, the Multiplier and the robots.
//! - [`status`]: status codes' reason phrases and status lines, one table
//!   for every writer.

pub mod body;
pub mod chunked;
pub mod claim;
pub mod date;
pub mod echo;
mod error;
pub mod fields;
mod length;
pub mod request;
pub mod response;
mod scan;
pub mod status;

pub use error::HttpError;
pub use request::{Method, RequestHead};
pub use response::{Framing, ResponseHead};
pub use scan::HeadScanner;

/// Most headers a parsed message may carry.
pub const MAX_HEADERS: usize = 64;
/// Largest accepted header block, in bytes.
pub const MAX_HEAD_LEN: usize = 64 * 1024;

/// True if `value` (a comma-separated header list) contains `token`,
/// case-insensitively.
pub fn has_token(value: &[u8], token: &str) -> bool {
    value
        .split(|&b| b == b',')
        .any(|t| t.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

/// The length of a head httparse found complete, within the `max_head`
/// limit; `None` while more bytes are needed (`buffered` so far).
fn complete_head(
    parsed: httparse::Status<usize>,
    buffered: usize,
    max_head: usize,
) -> Result<Option<usize>, HttpError> {
    match parsed {
        httparse::Status::Complete(n) if n > max_head => Err(HttpError::HeadTooLarge(max_head)),
        httparse::Status::Complete(n) => Ok(Some(n)),
        httparse::Status::Partial if buffered > max_head => Err(HttpError::HeadTooLarge(max_head)),
        httparse::Status::Partial => Ok(None),
    }
}
