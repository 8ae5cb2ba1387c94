//! What the crates' tests share to talk HTTP on loopback, so that no test
//! grows its own server, client or parser:
//!
//! - `origin`: the scripted origin. It is `cacheoff_conform`'s [`Origin`]
//!   (the codebase's one), re-exported with [`origin`] (one script for
//!   every path, on a port of its own) and reply builders beside
//!   [`Reply::new`]: a body of any bytes ([`binary`]), exact bytes
//!   ([`raw`], [`raw_and_close`]), written in pieces ([`pieces`],
//!   [`paced`]), a reply that never comes ([`hold`]) or never ends
//!   ([`endless`]), a chunked body ([`chunked`]). Replies
//!   beyond these: [`Reply::write`], the script writing on the
//!   connection itself.
//! - `client`: a raw HTTP/1.1 client over a `TcpStream` ([`Client`]) that
//!   sends the test's bytes as they are and reads replies, interim ones
//!   included, with the house codec through `cacheoff_conform`'s
//!   [`Reader`] into a [`Response`]; one exchange on a new connection
//!   ([`exchange`]), or every byte until the peer closes ([`read_all`]).
//! - `wait`: readiness waits, a condition polled within a limit
//!   ([`until`], [`within`]), never a fixed sleep.
//! - `host`: this process and its sockets: [`free_port`], whether
//!   something listens ([`accepting`]), [`rss`], [`threads`],
//!   [`threads_named`], a connection with a tiny receive window
//!   ([`small_window`]), whether the peer closed ([`closed_now`],
//!   [`closed_within`]).
//! - `alone`: a test that measures this process runs in a process of its
//!   own ([`alone!`]), not beside the other tests of its binary.
//!
//! A dev-dependency only: no library or binary links it.

mod alone;
mod client;
mod host;
mod origin;
mod wait;

pub use alone::{alone, test_name};
pub use cacheoff_conform::Reader;
pub use client::{exchange, read_all, Client, Response, TIMEOUT};
pub use host::{
    accepting, closed_now, closed_within, free_port, rss, small_window, threads, threads_named,
};
pub use origin::{
    binary, chunked, endless, hold, origin, origin_on, paced, pieces, raw, raw_and_close, Origin,
    Reply, Seen,
};
pub use wait::{until, within};
