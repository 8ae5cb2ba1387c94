//! HTTP/2 on the robots' side: one connection per target carries many
//! lanes (streams), and a lane looks to the exchange like an HTTP/1.1
//! connection. The request the exchange wrote is turned into an HTTP/2
//! request; the reply's head is written back as HTTP/1.1 text and its
//! DATA frames follow as the body, so the same parser, verdict, claims
//! and body check judge both versions, and the echo travels in the same
//! header.

use bytes::Bytes;
use h2::client::{ResponseFuture, SendRequest};
use h2::RecvStream;
use std::cell::Cell;
use std::io;
use std::rc::Rc;
use std::time::Instant;

/// One HTTP/2 connection of a robot, shared by its lanes.
pub struct H2Conn {
    send: SendRequest<Bytes>,
    /// `https` or `http`: the `:scheme` of every request.
    scheme: &'static str,
    /// Set by the connection's driver task when the connection ends.
    closed: Rc<Cell<bool>>,
    /// Transactions carried; at `limit` the connection takes no more and
    /// closes once its lanes finish (the workload's `conn_reuse`).
    uses: Cell<u32>,
    limit: u32,
    pub idle_since: Cell<Instant>,
    /// Counts the connection as open while it lives.
    _open: crate::local::OpenGuard,
}

impl H2Conn {
    /// Handshakes HTTP/2 on `io` (already through TLS, if any) and
    /// starts the task that drives the connection.
    pub async fn handshake<T>(
        io: T,
        scheme: &'static str,
        limit: u32,
        open: crate::local::OpenGuard,
    ) -> io::Result<H2Conn>
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + 'static,
    {
        let (send, conn) = h2::client::handshake(io).await.map_err(h2_io)?;
        let closed = Rc::new(Cell::new(false));
        let flag = closed.clone();
        tokio::task::spawn_local(async move {
            let _ = conn.await;
            flag.set(true);
        });
        Ok(H2Conn {
            send,
            scheme,
            closed,
            uses: Cell::new(0),
            limit,
            idle_since: Cell::new(Instant::now()),
            _open: open,
        })
    }

    /// Whether a new transaction may start on it.
    pub fn usable(&self) -> bool {
        !self.closed.get() && self.uses.get() < self.limit
    }

    pub fn lane(self: &Rc<Self>) -> Lane {
        Lane {
            conn: self.clone(),
            response: None,
            body: None,
            pending: Bytes::new(),
        }
    }
}

/// One stream at a time on a shared connection: the exchange's view of
/// an HTTP/2 connection.
pub struct Lane {
    pub conn: Rc<H2Conn>,
    response: Option<ResponseFuture>,
    body: Option<RecvStream>,
    /// Body bytes received but not yet read.
    pending: Bytes,
}

/// Fields HTTP/2 forbids (RFC 9113 §8.2.2) or carries as a pseudo-header
/// (`Host` as `:authority`, §8.3.1).
fn not_in_h2(name: &str, value: &[u8]) -> bool {
    cacheoff_http::fields::h2_forbidden(name, value) || name.eq_ignore_ascii_case("host")
}

impl Lane {
    /// Sends the HTTP/1.1 request in `request` (head and body) as an
    /// HTTP/2 request on a new stream.
    pub async fn send(&mut self, request: &[u8]) -> io::Result<()> {
        self.response = None;
        self.body = None;
        self.pending = Bytes::new();
        let mut fields = [httparse::EMPTY_HEADER; 32];
        let mut req = httparse::Request::new(&mut fields);
        let head_len = match req.parse(request) {
            Ok(httparse::Status::Complete(n)) => n,
            _ => return Err(io::Error::new(io::ErrorKind::InvalidData, "request head")),
        };
        let host = req
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("host"))
            .and_then(|h| std::str::from_utf8(h.value).ok())
            .unwrap_or("localhost");
        let path = req.path.unwrap_or("/");
        // An absolute URI (a forward proxy's form) keeps its own authority.
        let uri = if path.starts_with('/') {
            format!("{}://{host}{path}", self.conn.scheme)
        } else {
            path.to_string()
        };
        let mut b = http::Request::builder()
            .method(req.method.unwrap_or("GET"))
            .uri(uri);
        for h in req.headers.iter().filter(|h| !not_in_h2(h.name, h.value)) {
            let mut value = http::HeaderValue::from_bytes(h.value)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
            // Every transaction's id is new: kept out of HPACK's table, it
            // neither evicts what repeats nor lengthens every lookup.
            if h.name
                .eq_ignore_ascii_case(cacheoff_http::echo::XACT_HEADER)
            {
                value.set_sensitive(true);
            }
            b = b.header(h.name, value);
        }
        let built = b
            .body(())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        let body = &request[head_len..];
        let mut send = self.conn.send.clone().ready().await.map_err(h2_io)?;
        let (response, mut stream) = send.send_request(built, body.is_empty()).map_err(h2_io)?;
        if !body.is_empty() {
            stream
                .send_data(Bytes::copy_from_slice(body), true)
                .map_err(h2_io)?;
        }
        self.conn.uses.set(self.conn.uses.get() + 1);
        self.response = Some(response);
        Ok(())
    }

    /// The reply's head as HTTP/1.1 text, then its body: into `buf`'s
    /// spare capacity as `read_buf` does; 0 once the stream ended.
    pub async fn read_buf(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        let before = buf.len();
        if let Some(response) = self.response.take() {
            let (parts, body) = response.await.map_err(h2_io)?.into_parts();
            crate::h1text::response_head(buf, &parts);
            self.body = Some(body);
            return Ok(buf.len() - before);
        }
        if self.pending.is_empty() && !self.next_data().await? {
            return Ok(0);
        }
        buf.extend_from_slice(&std::mem::take(&mut self.pending));
        Ok(buf.len() - before)
    }

    /// Body bytes into `out`, as `read` does; 0 once the stream ended.
    pub async fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pending.is_empty() && !self.next_data().await? {
            return Ok(0);
        }
        let n = self.pending.len().min(out.len());
        out[..n].copy_from_slice(&self.pending.split_to(n));
        Ok(n)
    }

    /// Waits for the next non-empty DATA frame; false at the stream's end.
    async fn next_data(&mut self) -> io::Result<bool> {
        let Some(body) = self.body.as_mut() else {
            return Ok(false);
        };
        loop {
            match body.data().await {
                None => {
                    self.body = None;
                    return Ok(false);
                }
                Some(Err(e)) => return Err(h2_io(e)),
                Some(Ok(chunk)) => {
                    let _ = body.flow_control().release_capacity(chunk.len());
                    if !chunk.is_empty() {
                        self.pending = chunk;
                        return Ok(true);
                    }
                }
            }
        }
    }
}

/// An HTTP/2 failure as the I/O error the exchange classifies.
pub fn h2_io(e: h2::Error) -> io::Error {
    if e.is_io() {
        return e.into_io().expect("is_io");
    }
    io::Error::new(io::ErrorKind::ConnectionReset, e)
}

#[cfg(test)]
mod tests {
    use super::not_in_h2;

    #[test]
    fn rfc9113_8_2_2_a_request_sheds_connection_fields_and_host() {
        for (name, value) in [
            ("Connection", "keep-alive"),
            ("Keep-Alive", "timeout=5"),
            ("Proxy-Connection", "keep-alive"),
            ("Transfer-Encoding", "chunked"),
            ("Upgrade", "h2c"),
            ("TE", "gzip"),
            ("HOST", "s1.bench.tst"),
        ] {
            assert!(not_in_h2(name, value.as_bytes()), "{name}");
        }
        for (name, value) in [
            ("TE", "trailers"),
            ("X-Xact", "7"),
            ("If-Modified-Since", "x"),
        ] {
            assert!(!not_in_h2(name, value.as_bytes()), "{name}");
        }
    }
}
