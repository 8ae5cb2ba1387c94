//! One request being answered: where it goes ([`Target`]), what every
//! step needs ([`Xact`]), and what it came to ([`Done`]: its
//! [`Decision`] and the reply's figures, for the access log).

use crate::access_log::LogCode;
use crate::decision::Decision;
use crate::upstream::Pool;
use crate::Shared;
use cacheoff_http::RequestHead;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Instant;

/// Where a request goes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Target {
    /// The cache key and the logged URL: `http://host:port/path`.
    pub url: String,
    pub authority: String,
    pub path: String,
}

/// One request being answered: what every step needs.
#[derive(Clone, Copy)]
pub(crate) struct Xact<'a> {
    pub req: &'a RequestHead,
    pub t: &'a Target,
    /// The request body (uploads).
    pub body: &'a [u8],
    /// When the request head arrived.
    pub t0: Instant,
    pub sh: &'a Arc<Shared>,
    pub pool: &'a Pool,
}

/// What one transaction did, for the log.
pub(crate) struct Done {
    pub decision: Decision,
    /// The reply is a 304 the proxy made from a copy, the client's
    /// condition being met.
    pub not_modified: bool,
    pub status: u16,
    pub bytes: u64,
    pub peer: Option<IpAddr>,
    pub content_type: String,
    /// The connection can carry another request.
    pub keep_alive: bool,
}

impl Done {
    /// The proxy's own reply (a refusal, an error, as `decision` says),
    /// after which the connection closes.
    pub(crate) fn own(decision: Decision, status: u16, bytes: u64) -> Done {
        Done {
            decision,
            not_modified: false,
            status,
            bytes,
            peer: None,
            content_type: String::new(),
            keep_alive: false,
        }
    }

    /// The access log's code for it.
    pub(crate) fn code(&self) -> LogCode {
        self.decision.log_code(self.not_modified)
    }
}

/// A request's header fields as the cache's functions take them.
pub(crate) fn request_fields(req: &RequestHead) -> impl Iterator<Item = (&str, &[u8])> + Clone {
    req.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice()))
}
