//! One stream type for a connection in the clear or over TLS, so the code
//! that speaks HTTP on it does not care which.

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, HandshakeKind, ServerConfig};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::{client, server, TlsAcceptor, TlsConnector};

pub enum Stream {
    Plain(TcpStream),
    Client(Box<client::TlsStream<TcpStream>>),
    Server(Box<server::TlsStream<TcpStream>>),
}

/// The TLS handshake as a client, naming the server `name` (SNI and the
/// name the certificate must cover; an IP address is checked as one).
pub async fn connect(cfg: &Arc<ClientConfig>, name: &str, tcp: TcpStream) -> io::Result<Stream> {
    let name = ServerName::try_from(name.to_string())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{name}: {e}")))?;
    let tls = TlsConnector::from(cfg.clone()).connect(name, tcp).await?;
    Ok(Stream::Client(Box::new(tls)))
}

/// The TLS handshake as a server.
pub async fn accept(cfg: &Arc<ServerConfig>, tcp: TcpStream) -> io::Result<Stream> {
    let tls = TlsAcceptor::from(cfg.clone()).accept(tcp).await?;
    Ok(Stream::Server(Box::new(tls)))
}

impl Stream {
    /// The socket, when in the clear (for writes that must not wait).
    pub fn plain(&self) -> Option<&TcpStream> {
        match self {
            Stream::Plain(s) => Some(s),
            _ => None,
        }
    }

    /// The protocol ALPN settled on, if any.
    pub fn alpn(&self) -> Option<&[u8]> {
        match self {
            Stream::Plain(_) => None,
            Stream::Client(s) => s.get_ref().1.alpn_protocol(),
            Stream::Server(s) => s.get_ref().1.alpn_protocol(),
        }
    }

    /// Whether the TLS session was resumed rather than negotiated anew.
    pub fn resumed(&self) -> bool {
        let kind = match self {
            Stream::Plain(_) => None,
            Stream::Client(s) => s.get_ref().1.handshake_kind(),
            Stream::Server(s) => s.get_ref().1.handshake_kind(),
        };
        kind == Some(HandshakeKind::Resumed)
    }
}

macro_rules! each {
    ($self:ident, $s:ident => $e:expr) => {
        match $self.get_mut() {
            Stream::Plain($s) => {
                let $s = Pin::new($s);
                $e
            }
            Stream::Client($s) => {
                let $s = Pin::new(&mut **$s);
                $e
            }
            Stream::Server($s) => {
                let $s = Pin::new(&mut **$s);
                $e
            }
        }
    };
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        each!(self, s => s.poll_read(cx, buf))
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        each!(self, s => s.poll_write(cx, buf))
    }
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        each!(self, s => s.poll_write_vectored(cx, bufs))
    }
    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Client(s) => s.is_write_vectored(),
            Stream::Server(s) => s.is_write_vectored(),
        }
    }
    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, s => s.poll_flush(cx))
    }
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each!(self, s => s.poll_shutdown(cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{client_config, server_config, Pki, ALPN_H2, ALPN_HTTP1};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A handshake over loopback; a second with the same client config
    /// resumes when resumption is on and does not when it is off.
    #[tokio::test(flavor = "current_thread")]
    async fn handshakes_negotiate_alpn_and_resume_as_configured() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::create(dir.path(), &["*.bench.tst".into()]).unwrap();
        let server = server_config(&pki).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                let server = server.clone();
                tokio::spawn(async move {
                    let mut s = accept(&server, tcp).await.unwrap();
                    let mut b = [0u8; 4];
                    s.read_exact(&mut b).await.unwrap();
                    s.write_all(s.alpn().unwrap_or(b"none").to_vec().as_slice())
                        .await
                        .unwrap();
                    s.shutdown().await.unwrap();
                });
            }
        });
        for (resume, alpn, want) in [(true, ALPN_H2, true), (false, ALPN_HTTP1, false)] {
            let cfg = client_config(&pki.ca, &[alpn], resume).unwrap();
            let mut resumed = Vec::new();
            for _ in 0..2 {
                let tcp = TcpStream::connect(addr).await.unwrap();
                let mut s = connect(&cfg, "s1.bench.tst", tcp).await.unwrap();
                assert_eq!(s.alpn(), Some(alpn));
                s.write_all(b"ping").await.unwrap();
                let mut got = Vec::new();
                s.read_to_end(&mut got).await.unwrap();
                assert_eq!(got, alpn);
                resumed.push(s.resumed());
            }
            assert_eq!(resumed, [false, want], "resume {resume}");
        }
        // A name the certificate does not cover fails the handshake.
        let cfg = client_config(&pki.ca, &[ALPN_H2], false).unwrap();
        let tcp = TcpStream::connect(addr).await.unwrap();
        assert!(connect(&cfg, "other.example", tcp).await.is_err());
    }
}
