//! The socket a server's workers accept on: one per worker on the same
//! address (`SO_REUSEPORT`, so the kernel spreads connections over
//! workers), nonblocking for their runtimes, with a deep backlog so a
//! burst of connections waits for a busy worker instead of being refused.

use std::io;
use std::net::{SocketAddr, TcpListener};

/// Pending connections the kernel keeps per listener (capped by
/// `net.core.somaxconn`).
pub const BACKLOG: i32 = 4096;

/// A nonblocking TCP listener on `addr`, which other listeners from this
/// function may share (`SO_REUSEADDR`, `SO_REUSEPORT`): bind the first to
/// port 0, then the others to the address it got.
pub fn listener(addr: SocketAddr) -> io::Result<TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.set_reuse_port(true)?;
    s.bind(&addr.into())?;
    s.listen(BACKLOG)?;
    s.set_nonblocking(true)?;
    Ok(s.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpStream;

    #[test]
    fn workers_share_one_port_and_never_block_on_accept() {
        let first = listener("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = first.local_addr().unwrap();
        let second = listener(addr).unwrap();
        assert_eq!(second.local_addr().unwrap(), addr);
        for l in [&first, &second] {
            let e = l.accept().unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        }
        // Every connection lands on one of them.
        let _clients: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let mut accepted = 0;
        let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while accepted < 8 && std::time::Instant::now() < end {
            for l in [&first, &second] {
                if l.accept().is_ok() {
                    accepted += 1;
                }
            }
            std::thread::yield_now();
        }
        assert_eq!(accepted, 8);
    }

    #[test]
    fn a_port_held_without_reuse_is_refused() {
        let plain = TcpListener::bind("127.0.0.1:0").unwrap();
        let e = listener(plain.local_addr().unwrap()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse);
    }
}
