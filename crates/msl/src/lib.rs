//! The cache-off MSL test: how long a product keeps a connection it closed
//! in TIME-WAIT.
//!
//! The cache-off rules ask products to keep TIME-WAIT for at least 60 s
//! (twice a maximum segment lifetime of at least 30 s), so that a delayed
//! segment of an old connection cannot corrupt a new one with the same
//! addresses. Web Polygraph's `msl_test` measured it, and so does
//! [`measure`]:
//!
//! 1. **Make the product close first.** We connect, send an HTTP/1.0
//!    request without keep-alive ([`MslConfig::request`]) and read until
//!    the product's FIN before closing our side: the side that sends the
//!    first FIN is the one that enters TIME-WAIT. A product that keeps the
//!    connection open is an error ([`MslError::NotClosed`]): we would be
//!    the active closer.
//! 2. **Probe.** From a raw socket we send, every [`MslConfig::interval`],
//!    a SYN for the same address pair with the same initial sequence
//!    number as the closed connection and no TCP options (no timestamps):
//!    to a product still in TIME-WAIT it is an old duplicate, answered
//!    with a bare ACK; once TIME-WAIT is over the product accepts it with
//!    a SYN-ACK. The time from the product's close to that SYN-ACK is its
//!    TIME-WAIT ([`MslReport::time_wait_s`]); it passes at
//!    [`REQUIRED_TIME_WAIT`] or more.
//! 3. **Keep our kernel quiet.** The product's ACKs would find no socket
//!    here, and our kernel's RSTs in answer would end a Linux TIME-WAIT
//!    early ("TIME-WAIT assassination"). A guard socket, our end of the
//!    closed connection recreated with `TCP_REPAIR`, absorbs them (see
//!    `sys::Guard`).
//!
//! Raw sockets need CAP_NET_RAW and `TCP_REPAIR` CAP_NET_ADMIN: in
//! practice, run as root. IPv4 only. docs/msl.md is the user's view.

mod packet;
mod sys;

use packet::Answer;
use socket2::{Domain, Protocol, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, SocketAddrV4, TcpStream};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

/// The cache-off rule: TIME-WAIT of at least 60 s (MSL of at least 30 s).
pub const REQUIRED_TIME_WAIT: Duration = Duration::from_secs(60);

/// What to test and how.
#[derive(Debug, Clone)]
pub struct MslConfig {
    /// The product's address (a proxy's or surrogate's listening port).
    pub product: SocketAddr,
    /// The bytes sent on the connection the product must close; any
    /// reply will do as long as the product closes after it.
    pub request: Vec<u8>,
    /// Time between probe SYNs: the precision of the measurement.
    pub interval: Duration,
    /// How long to probe before giving up (from the product's close).
    pub timeout: Duration,
    /// How long the product has to connect, reply and close.
    pub close_wait: Duration,
    /// Hold the address pair with a guard socket while probing. Only an
    /// experiment turns this off, to show TIME-WAIT assassination.
    pub guard: bool,
}

impl MslConfig {
    /// Defaults: a forward proxy's request, a probe every 0.1 s for up to
    /// 180 s, 5 s for the product to close.
    pub fn new(product: SocketAddr) -> MslConfig {
        MslConfig {
            product,
            request: Self::proxy_request(),
            interval: Duration::from_millis(100),
            timeout: Duration::from_secs(180),
            close_wait: Duration::from_secs(5),
            guard: true,
        }
    }

    /// The product's IPv4 address if the settings can be used.
    pub fn check(&self) -> Result<SocketAddrV4, MslError> {
        for (what, d) in [("probe interval", self.interval), ("timeout", self.timeout)] {
            if d.is_zero() {
                return Err(MslError::BadSetting(what));
            }
        }
        match self.product {
            SocketAddr::V4(a) => Ok(a),
            SocketAddr::V6(_) => Err(MslError::Ipv6(self.product)),
        }
    }

    /// A forward proxy's request: a URL whose server does not exist, so
    /// the proxy answers an error at once, and HTTP/1.0 closes after it.
    pub fn proxy_request() -> Vec<u8> {
        b"GET http://127.0.0.1:1/cacheoff-msl HTTP/1.0\r\n\r\n".to_vec()
    }

    /// A surrogate's (reverse proxy's) request for `/` of site `host`.
    pub fn surrogate_request(host: &str) -> Vec<u8> {
        format!("GET / HTTP/1.0\r\nHost: {host}\r\n\r\n").into_bytes()
    }
}

/// How probing ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The product accepted a probe (SYN-ACK): TIME-WAIT is over.
    Accepted,
    /// The product reset a probe: no TIME-WAIT left and nobody listening.
    Refused,
    /// Still in TIME-WAIT when [`MslConfig::timeout`] ran out: the
    /// TIME-WAIT is at least the timeout.
    TimedOut,
}

impl Ending {
    pub fn name(self) -> &'static str {
        match self {
            Ending::Accepted => "accepted",
            Ending::Refused => "refused",
            Ending::TimedOut => "timed_out",
        }
    }
}

/// The measurement.
#[derive(Debug, Clone)]
pub struct MslReport {
    pub product: SocketAddrV4,
    /// Our end of the closed connection (and of the probes).
    pub local: SocketAddrV4,
    /// From the product's close to the end of probing.
    pub time_wait: Duration,
    pub ending: Ending,
    /// The product closed with a RST instead of a FIN: no TIME-WAIT.
    pub closed_with_reset: bool,
    /// SYNs sent.
    pub probes: u64,
    /// Bare ACKs the product answered them with (TIME-WAIT; Linux sends
    /// at most two a second).
    pub time_wait_acks: u64,
}

impl MslReport {
    /// TIME-WAIT in seconds to the probes' precision (0.1 s).
    pub fn time_wait_s(&self) -> f64 {
        (self.time_wait.as_secs_f64() * 10.0).round() / 10.0
    }

    /// Whether the product meets the rule, judged on the figure shown.
    pub fn pass(&self) -> bool {
        self.time_wait_s() >= REQUIRED_TIME_WAIT.as_secs_f64()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum MslError {
    #[error("the MSL test needs raw sockets: run as root (or with CAP_NET_RAW and CAP_NET_ADMIN)")]
    NotPermitted,
    #[error("the MSL test speaks IPv4 only, and {0} is an IPv6 address")]
    Ipv6(SocketAddr),
    #[error("the {0} must be above zero")]
    BadSetting(&'static str),
    // The io::Error is told in the message rather than as a source, so
    // that an error chain does not tell it twice.
    #[error("cannot connect to {product}: {error}")]
    Connect {
        product: SocketAddr,
        error: io::Error,
    },
    #[error(
        "{product} kept the connection open {waited:?} after an HTTP/1.0 request ({got} bytes \
         received): cacheoff would have to close first and would get the TIME-WAIT itself, \
         so the product's cannot be measured"
    )]
    NotClosed {
        product: SocketAddr,
        waited: Duration,
        got: usize,
    },
    #[error(
        "{product} answered none of {probes} probe SYNs in {waited:?}: a TIME-WAIT cannot be \
         told from a host that drops them"
    )]
    Silent {
        product: SocketAddr,
        probes: u64,
        waited: Duration,
    },
    #[error("{what}: {error}")]
    Io {
        what: &'static str,
        error: io::Error,
    },
}

impl MslError {
    /// Whether the test could not be set up (as opposed to a product that
    /// took part but could not be measured).
    pub fn is_setup(&self) -> bool {
        !matches!(self, MslError::Silent { .. })
    }
}

fn io_err(what: &'static str) -> impl FnOnce(io::Error) -> MslError {
    move |error| MslError::Io { what, error }
}

/// Like [`io_err`], with a missing capability told as such.
fn privileged(what: &'static str) -> impl FnOnce(io::Error) -> MslError {
    move |error| match error.kind() {
        io::ErrorKind::PermissionDenied => MslError::NotPermitted,
        _ => MslError::Io { what, error },
    }
}

/// Runs the MSL test: makes the product close a connection, then probes
/// its TIME-WAIT. Takes as long as the TIME-WAIT (or the timeout).
pub fn measure(cfg: &MslConfig) -> Result<MslReport, MslError> {
    let product = cfg.check()?;
    // Both privileges are checked before the product sees anything.
    let raw = sys::RawTcp::open().map_err(privileged("opening a raw socket"))?;
    sys::check_repair().map_err(privileged("TCP_REPAIR"))?;
    let closed = close_by_product(cfg, product)?;
    raw.focus(closed.local, product)
        .map_err(io_err("setting up the raw socket"))?;
    let guard = match cfg.guard {
        true => Some(
            sys::Guard::hold(closed.local, product, closed.end)
                .map_err(io_err("holding the connection's addresses"))?,
        ),
        false => None,
    };
    let probed = probe(cfg, &raw, &closed, product)?;
    drop(guard);
    if probed.ending == Ending::Accepted {
        // Reset the connection the product just accepted, rather than
        // leaving it half-open until its SYN-ACK retries give up.
        let rst = packet::segment(
            closed.local,
            product,
            closed.isn.wrapping_add(1),
            0,
            packet::RST,
        );
        raw.send(&rst, *product.ip())
            .map_err(io_err("sending a RST"))?;
    }
    if probed.ending == Ending::TimedOut && probed.acks == 0 {
        return Err(MslError::Silent {
            product: cfg.product,
            probes: probed.probes,
            waited: cfg.timeout,
        });
    }
    Ok(MslReport {
        product,
        local: closed.local,
        time_wait: probed.at.saturating_duration_since(closed.at),
        ending: probed.ending,
        closed_with_reset: closed.reset,
        probes: probed.probes,
        time_wait_acks: probed.acks,
    })
}

/// The connection the product closed.
struct Closed {
    local: SocketAddrV4,
    /// Our initial sequence number.
    isn: u32,
    /// Where the connection ended (after both FINs).
    end: sys::Seqs,
    /// When the product closed (its FIN or RST arrived).
    at: Instant,
    reset: bool,
}

fn close_by_product(cfg: &MslConfig, product: SocketAddrV4) -> Result<Closed, MslError> {
    let connect_err = |error| MslError::Connect {
        product: cfg.product,
        error,
    };
    let s = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)).map_err(connect_err)?;
    s.connect_timeout(&SocketAddr::V4(product).into(), cfg.close_wait)
        .map_err(connect_err)?;
    let local = match s.local_addr().ok().and_then(|a| a.as_socket_ipv4()) {
        Some(a) => a,
        None => return Err(io_err("our address")(io::ErrorKind::InvalidData.into())),
    };
    let fd = s.as_raw_fd();
    // The ISN, read back from the kernel: right after the handshake the
    // next sequence number to send is the ISN plus one (for the SYN). A
    // handshake of our own on the raw socket would let us choose it, but
    // then our kernel's RSTs to the product's SYN-ACK would need silencing
    // too; capturing our own SYN would work on loopback only (a raw socket
    // sees incoming segments).
    let isn = sys::seqs(fd)
        .map_err(privileged("reading the initial sequence number"))?
        .send
        .wrapping_sub(1);
    let mut stream = TcpStream::from(s);
    stream
        .write_all(&cfg.request)
        .map_err(io_err("sending the request"))?;
    let deadline = Instant::now() + cfg.close_wait;
    let mut got = 0;
    let mut buf = [0u8; 16 * 1024];
    let reset = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let not_closed = MslError::NotClosed {
            product: cfg.product,
            waited: cfg.close_wait,
            got,
        };
        if left.is_zero() {
            return Err(not_closed);
        }
        stream
            .set_read_timeout(Some(left))
            .map_err(io_err("reading the reply"))?;
        match stream.read(&mut buf) {
            Ok(0) => break false,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => break true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(not_closed)
            }
            Err(e) => return Err(io_err("reading the reply")(e)),
        }
    };
    let at = Instant::now();
    let mut end = sys::seqs(fd).map_err(io_err("reading the sequence numbers"))?;
    if !reset {
        stream
            .shutdown(Shutdown::Write)
            .map_err(io_err("closing our side"))?;
        end.send = end.send.wrapping_add(1); // our FIN
                                             // Once our FIN is acknowledged the product is in TIME-WAIT and our
                                             // socket is gone, leaving the address pair to the guard.
        let done = Instant::now() + cfg.close_wait;
        while sys::tcp_state(fd).map_err(io_err("closing our side"))? != sys::TCP_CLOSE {
            if Instant::now() >= done {
                let e = io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the product did not acknowledge our FIN",
                );
                return Err(io_err("closing our side")(e));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    Ok(Closed {
        local,
        isn,
        end,
        at,
        reset,
    })
}

struct Probed {
    ending: Ending,
    /// When the answer that ended probing arrived (or the timeout).
    at: Instant,
    probes: u64,
    acks: u64,
}

fn probe(
    cfg: &MslConfig,
    raw: &sys::RawTcp,
    closed: &Closed,
    product: SocketAddrV4,
) -> Result<Probed, MslError> {
    let syn = packet::segment(closed.local, product, closed.isn, 0, packet::SYN);
    let deadline = closed.at + cfg.timeout;
    let mut next = Instant::now();
    let (mut probes, mut acks) = (0, 0);
    let mut buf = [0u8; 2048];
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Ok(Probed {
                ending: Ending::TimedOut,
                at: deadline,
                probes,
                acks,
            });
        }
        if now >= next {
            raw.send(&syn, *product.ip())
                .map_err(io_err("sending a probe"))?;
            probes += 1;
            next += cfg.interval;
            if next <= now {
                next = now + cfg.interval; // late: keep the cadence, no burst
            }
        }
        raw.wait(next.min(deadline))
            .map_err(io_err("waiting for answers"))?;
        while let Some(n) = raw.recv(&mut buf).map_err(io_err("reading answers"))? {
            let Some(seg) = packet::parse(&buf[..n]) else {
                continue;
            };
            let ending = match packet::answer(&seg, closed.local, product, closed.isn) {
                Some(Answer::Accept) => Ending::Accepted,
                Some(Answer::Refuse) => Ending::Refused,
                Some(Answer::TimeWait) => {
                    acks += 1;
                    continue;
                }
                None => continue,
            };
            return Ok(Probed {
                ending,
                at: Instant::now(),
                probes,
                acks,
            });
        }
    }
}
