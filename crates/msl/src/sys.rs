//! The system side: the raw socket that sends probes and reads answers,
//! sequence numbers read with `TCP_REPAIR`, and the guard socket that owns
//! the connection's address pair while we probe.

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io;
use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

// From linux/tcp.h; libc has the option names but not their values.
const TCP_REPAIR_ON: libc::c_int = 1;
/// Leaves repair mode without the window probe that `TCP_REPAIR_OFF`
/// sends: nothing may reach the product but our FIN and the probes.
const TCP_REPAIR_OFF_NO_WP: libc::c_int = -1;
const TCP_RECV_QUEUE: libc::c_int = 1;
const TCP_SEND_QUEUE: libc::c_int = 2;
/// `tcpi_state` of a socket that is done (its FIN acknowledged).
pub const TCP_CLOSE: u8 = 7;

fn setsockopt(fd: RawFd, level: libc::c_int, name: libc::c_int, val: u32) -> io::Result<()> {
    // SAFETY: a valid pointer to 4 bytes, and their length.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&val as *const u32).cast(),
            std::mem::size_of::<u32>() as libc::socklen_t,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn getsockopt<const N: usize>(fd: RawFd, name: libc::c_int) -> io::Result<[u8; N]> {
    let mut buf = [0u8; N];
    let mut len = N as libc::socklen_t;
    // SAFETY: a valid buffer of `len` bytes; the kernel writes at most that.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            name,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(buf)
}

fn repair(fd: RawFd, mode: libc::c_int) -> io::Result<()> {
    setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_REPAIR, mode as u32)
}

/// Whether this process may use `TCP_REPAIR` (CAP_NET_ADMIN), tried on a
/// socket of its own before anything is sent to the product.
pub fn check_repair() -> io::Result<()> {
    let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    repair(s.as_raw_fd(), TCP_REPAIR_ON)
}

/// The next sequence numbers of a socket's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seqs {
    /// The next byte we would send (`write_seq`).
    pub send: u32,
    /// The next byte we expect (`rcv_nxt`; a FIN received counts one).
    pub recv: u32,
}

/// Reads a socket's sequence numbers: repair mode on, the two queues'
/// `TCP_QUEUE_SEQ`, repair mode off again without sending anything.
pub fn seqs(fd: RawFd) -> io::Result<Seqs> {
    repair(fd, TCP_REPAIR_ON)?;
    let read = |queue| -> io::Result<u32> {
        setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_REPAIR_QUEUE, queue as u32)?;
        Ok(u32::from_ne_bytes(getsockopt::<4>(
            fd,
            libc::TCP_QUEUE_SEQ,
        )?))
    };
    let got = read(TCP_SEND_QUEUE).and_then(|send| {
        Ok(Seqs {
            send,
            recv: read(TCP_RECV_QUEUE)?,
        })
    });
    repair(fd, TCP_REPAIR_OFF_NO_WP)?;
    got
}

/// The TCP state of a socket (`tcpi_state`, the first byte of TCP_INFO).
pub fn tcp_state(fd: RawFd) -> io::Result<u8> {
    Ok(getsockopt::<1>(fd, libc::TCP_INFO)?[0])
}

/// Our end of the measured connection, brought back to life with
/// `TCP_REPAIR` after it closed, so that our kernel has a socket for the
/// address pair while we probe.
///
/// Without it, the product's ACK to a probe (its TIME-WAIT answering an
/// old SYN) finds no socket here and our kernel answers it with a RST,
/// which ends the TIME-WAIT early on Linux (RFC 1337's "TIME-WAIT
/// assassination", `net.ipv4.tcp_rfc1337=0`): measured, the next probe is
/// accepted 0.1 s after the close. With it, that ACK is a duplicate ACK
/// of an established connection (its sequence numbers are the ones the
/// closed connection ended with) and is dropped without an answer.
///
/// A repair-mode socket is established without a handshake and closes
/// without a packet, so dropping the guard, or the process dying, sends
/// nothing and leaves nothing behind (unlike a firewall rule).
#[derive(Debug)]
pub struct Guard(#[allow(dead_code)] Socket);

impl Guard {
    /// `ours` and `product` are the connection's ends, `seqs` where it
    /// ended: the next sequence number we would send after our FIN and the
    /// next we expect after the product's FIN.
    pub fn hold(ours: SocketAddrV4, product: SocketAddrV4, seqs: Seqs) -> io::Result<Guard> {
        let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
        let fd = s.as_raw_fd();
        // Repair mode also lets the socket bind a port in use.
        repair(fd, TCP_REPAIR_ON)?;
        s.bind(&SocketAddr::V4(ours).into())?;
        for (queue, seq) in [(TCP_SEND_QUEUE, seqs.send), (TCP_RECV_QUEUE, seqs.recv)] {
            setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_REPAIR_QUEUE, queue as u32)?;
            setsockopt(fd, libc::IPPROTO_TCP, libc::TCP_QUEUE_SEQ, seq)?;
        }
        // Established at once: no SYN is sent in repair mode. The socket
        // stays in repair mode so that closing it is silent too.
        s.connect(&SocketAddr::V4(product).into())?;
        Ok(Guard(s))
    }
}

/// A raw IPv4 TCP socket: it sends our hand-made segments (the kernel adds
/// the IP header) and receives copies of incoming TCP segments.
#[derive(Debug)]
pub struct RawTcp(Socket);

impl RawTcp {
    /// Fails with `PermissionDenied` without CAP_NET_RAW.
    pub fn open() -> io::Result<RawTcp> {
        let s = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::TCP))?;
        s.set_nonblocking(true)?;
        Ok(RawTcp(s))
    }

    /// Sends from `local` (the source address the kernel puts in the IP
    /// header) and receives only segments between `product` and `local`.
    pub fn focus(&self, local: SocketAddrV4, product: SocketAddrV4) -> io::Result<()> {
        self.0
            .bind(&SocketAddr::V4(SocketAddrV4::new(*local.ip(), 0)).into())?;
        self.0
            .attach_filter(&crate::packet::port_filter(product.port(), local.port()))?;
        // Drop what arrived before the filter.
        let mut buf = [0u8; 2048];
        while self.recv(&mut buf)?.is_some() {}
        Ok(())
    }

    pub fn send(&self, segment: &[u8], to: Ipv4Addr) -> io::Result<()> {
        let to: SockAddr = SocketAddr::V4(SocketAddrV4::new(to, 0)).into();
        self.0.send_to(segment, &to)?;
        Ok(())
    }

    /// One packet if one is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: u8 and MaybeUninit<u8> have the same layout, and recv
        // only writes initialised bytes into the buffer.
        let uninit = unsafe { &mut *(buf as *mut [u8] as *mut [MaybeUninit<u8>]) };
        match self.0.recv(uninit) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Waits until a packet is waiting or `deadline` passes.
    pub fn wait(&self, deadline: Instant) -> io::Result<()> {
        // Rounded up: waking early would spin until the deadline.
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = left.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int;
        let mut p = libc::pollfd {
            fd: self.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, ms) } < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(())
    }
}
