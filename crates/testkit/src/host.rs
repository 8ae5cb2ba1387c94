//! This process and its sockets, as tests measure them: a free port,
//! whether something listens, the resident set, threads, a connection
//! that takes little at a time, and whether a peer has closed.

use std::io::{self, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

/// A loopback port free a moment ago (for a process that must be told
/// its port; in-process listeners bind port 0 themselves).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    l.local_addr().unwrap().port()
}

/// Whether something accepts connections on `addr` now (a process the
/// test started, once it listens: poll it with [`crate::until`]).
pub fn accepting(addr: SocketAddr) -> bool {
    TcpStream::connect(addr).is_ok()
}

/// This process's resident set, in bytes.
pub fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS in /proc/self/status");
    kb * 1024
}

/// This process's threads now.
pub fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// This process's threads now whose name starts with `prefix`.
pub fn threads_named(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter(|t| {
            let comm = std::fs::read_to_string(t.as_ref().unwrap().path().join("comm"));
            comm.is_ok_and(|c| c.starts_with(prefix))
        })
        .count()
}

/// A connection to `addr` that advertises a tiny receive window, as a
/// slow reader does: what it does not read stays with the sender.
pub fn small_window(addr: SocketAddr) -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, None).unwrap();
    s.set_recv_buffer_size(4096).unwrap();
    s.connect(&addr.into()).unwrap();
    s.into()
}

/// Whether the peer has closed `s` by now (an end of stream or a reset),
/// reading and dropping what it sent meanwhile; `s` is left blocking.
pub fn closed_now(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 4096];
    let mut r = s;
    let gone = loop {
        match r.read(&mut buf) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break false,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break true,
        }
    };
    s.set_nonblocking(false).unwrap();
    gone
}

/// Reads until the peer closes (true) or `limit` passes (false); a reset
/// counts as closed. What was read is returned too.
pub fn closed_within(s: &mut TcpStream, limit: Duration) -> (bool, Vec<u8>) {
    let started = Instant::now();
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    while started.elapsed() < limit {
        match s.read(&mut chunk) {
            Ok(0) => return (true, got),
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return (true, got),
        }
    }
    (false, got)
}
