//! Before a run starts anything: the proxy under test must accept a
//! connection and answer one HTTP request, or the run would spend its whole
//! schedule counting connection errors and still look like a result.

use crate::RunError;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// How long the proxy has to accept the connection, and then to answer.
const LIMIT: Duration = Duration::from_secs(5);

/// Asks the proxy at `proxy` for a URL on a loopback port where nothing
/// listens: whatever it answers (an error status is expected) shows an
/// HTTP proxy is there. Nothing is started before this passes.
pub fn check(proxy: SocketAddr) -> Result<(), RunError> {
    let fail = |why: String| RunError::NoProxy { addr: proxy, why };
    let mut s = TcpStream::connect_timeout(&proxy, LIMIT)
        .map_err(|e| fail(format!("cannot connect ({e})")))?;
    let _ = s.set_read_timeout(Some(LIMIT));
    let _ = s.set_write_timeout(Some(LIMIT));
    s.write_all(
        b"GET http://127.0.0.1:1/cacheoff-preflight HTTP/1.1\r\nHost: 127.0.0.1:1\r\nConnection: close\r\n\r\n",
    )
    .map_err(|e| fail(format!("connected, but the request could not be sent ({e})")))?;
    let started = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 512];
    while got.len() < 12 && started.elapsed() < LIMIT {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => break,
        }
    }
    if is_status_line(&got) {
        return Ok(());
    }
    Err(fail(if got.is_empty() {
        format!("it accepted a connection but sent no HTTP reply within {LIMIT:?}")
    } else {
        format!(
            "it answered, but not in HTTP: {:?}",
            String::from_utf8_lossy(&got[..got.len().min(40)])
        )
    }))
}

/// `HTTP/1.x NNN`.
fn is_status_line(b: &[u8]) -> bool {
    b.len() >= 12
        && b.starts_with(b"HTTP/1.")
        && b[8] == b' '
        && b[9..12].iter().all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_http_status_line_counts_as_an_answer() {
        assert!(is_status_line(b"HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(is_status_line(b"HTTP/1.0 400 Bad"));
        assert!(!is_status_line(b"SSH-2.0-OpenSSH_9.2\r\n"));
        assert!(!is_status_line(b"HTTP/1.1 5"));
    }

    #[test]
    fn a_closed_port_and_a_silent_listener_are_both_refused() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let e = check(closed).unwrap_err();
        assert_eq!(e.code(), 2);
        assert!(e.to_string().contains(&closed.to_string()));
        // Something that speaks another protocol is not a proxy either.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            if let Ok((mut s, _)) = l.accept() {
                let _ = s.write_all(b"SSH-2.0-OpenSSH_9.2\r\n");
            }
        });
        let e = check(addr).unwrap_err();
        assert!(e.to_string().contains("not in HTTP"), "{e}");
    }
}
