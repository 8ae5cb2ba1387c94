//! Closed sets of counted things. Persisted names only grow at the end.

use cacheoff_base::closed_set;

closed_set! {
    /// Why a transaction failed. Counted per kind, never by message text.
    ErrorKind {
        ConnectFailed = "connect_failed": "the robot could not open a connection (to the proxy, or to the origin server without one)",
        ConnectTimeout = "connect_timeout": "opening a connection took longer than the connect timeout",
        ConnReset = "conn_reset": "the connection was reset or a read/write failed mid-transaction",
        PrematureClose = "premature_close": "the peer closed the connection before the response was complete",
        XactTimeout = "xact_timeout": "the transaction took longer than the transaction timeout",
        BadResponse = "bad_response": "the response head or its framing could not be parsed",
        HttpStatus = "http_status": "the response status was not the one the request called for (e.g. a proxy error page)",
        ForeignSource = "foreign_source": "the response carried no transaction echo: it came neither from an origin server nor from a cache of one",
        LengthMismatch = "length_mismatch": "the body length differs from the object's size",
        BodyMismatch = "body_mismatch": "the body bytes differ from the object's content",
        BacklogOverflow = "backlog_overflow": "a due request was dropped because the robot's queue of waiting requests was full",
        OriginBadRequest = "origin_bad_request": "an origin server received a request it could not parse or map to an object",
        ReloadHit = "reload_hit": "a reload request (Cache-Control: no-cache) was answered from a cache instead of the origin server",
        UncachableHit = "uncachable_hit": "a cache served a hit for an object the origin server marks uncachable",
        PostHit = "post_hit": "a POST was answered from a cache instead of the origin server",
        FalseNotModified = "false_304": "a 304 Not Modified for an object modified after the If-Modified-Since date (e.g. a cache judging by Expires instead of Last-Modified)",
        StaleContent = "stale_content": "the reply carried an older version of the object (an earlier Last-Modified) than the origin server had when the request was sent, or a cached copy whose Expires date had passed before the request was sent",
        HeadTooLarge = "head_too_large": "the response header block was larger than the robot accepts (robots.max_head, 64 KB by default)",
        NoBody = "no_body": "a 200 to a GET carried no body although the object has one",
        UnwantedBody = "unwanted_body": "a reply to a HEAD, or a 304, carried body bytes",
        Md5Mismatch = "md5_mismatch": "the Content-MD5 header does not match the body",
        FirstByteTimeout = "first_byte_timeout": "no response byte arrived within the first-byte timeout after the request was sent",
        IdleTimeout = "idle_timeout": "the response stalled: no byte arrived for longer than the idle timeout",
        FalseHit = "false_hit": "a hit served from a copy no cache may hold: the reply to a request that had finished before a POST emptied caches of the URL, the POST's own reply, or the reply to a transaction never sent",
        Unfinished = "unfinished": "the run ended (or was interrupted) with the transaction still in flight, or still waiting in its robot's backlog for a connection, and it did not finish within timeouts.drain: every issued request ends as a transaction, an abort or an error",
        TlsFailed = "tls_failed": "the robot's TLS handshake failed (the certificate does not cover the server's name or is not from the run's CA, or the peer does not speak TLS)",
        TunnelRefused = "tunnel_refused": "the forward proxy answered a CONNECT with a status other than 2xx, or closed the connection instead",
        OriginTlsFailed = "origin_tls_failed": "an origin server's TLS handshake with a client (the proxy) failed",
        OriginTimeout = "origin_timeout": "an origin server closed a connection at one of its deadlines: a request head or body (or a TLS or HTTP/2 handshake) not complete within timeouts.xact of its first byte, or a response the client (the proxy) did not take within timeouts.xact",
    }
}

closed_set! {
    /// How a successful reply was served.
    Outcome {
        Hit = "hit": "served from a cache: the reply carried another transaction's echo",
        Miss = "miss": "the origin server was reached: the reply carried this transaction's echo",
    }
}

closed_set! {
    /// Which clock a response time reads: where it starts. Every response
    /// time ends at the reply's last byte.
    RtClock {
        Intended = "intended": "from the intended start (corrected for coordinated omission)",
        Polygraph = "polygraph": "from the connection, as Web Polygraph",
    }
}

impl RtClock {
    /// A few words for column headings; [`RtClock::description`] says it
    /// in full.
    pub fn short_label(self) -> &'static str {
        match self {
            RtClock::Intended => "intended start",
            RtClock::Polygraph => "Polygraph clock",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        let mut names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ErrorKind::COUNT);
        for k in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_name(k.name()), Some(*k));
            assert!(!k.description().is_empty());
        }
    }
}
