//! A robot's connections: opening them from the robot's own address
//! (through a `CONNECT` tunnel and TLS where the run asks), keeping idle
//! ones for reuse, and the limits on both; with `robots.link`, each
//! carries the robot's end of the emulated link ([`Wire`]). Over HTTP/2 a
//! "connection" is a lane of a shared [`H2Conn`].

use super::h2::{H2Conn, Lane};
use crate::link::{End, Link};
use crate::local::{Clients, Local, OpenGuard};
use cacheoff_base::rng::{seeded, Rng, SimRng};
use cacheoff_stats::ErrorKind;
use cacheoff_tls::Stream;
use cacheoff_workload::HttpVersion;
use std::cell::{Cell, RefCell};
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Notify;

/// Head reads (and the body bytes that come with them).
pub const HEAD_CHUNK: usize = 4 * 1024;

/// Where a connection goes: the proxy (or surrogate), or an origin server
/// by index (directly, or through a forward proxy's tunnel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Proxy,
    Server(u32),
}

enum Io {
    Stream(Stream),
    H2(Lane),
}

/// A connection's socket and, with `robots.link`, the robot's end of the
/// emulated link (the same [`End`] an origin server keeps for
/// `servers.link`) with the worker that counts its waits: a request waits
/// out its travel before it is written, and response bytes are read no
/// further than the current slow-start round and held for the round's
/// wait as they arrive.
pub struct Wire {
    io: Io,
    link: Option<(End, Rc<Local>)>,
    /// A stream's own count as open (a lane's is its connection's).
    _open: Option<OpenGuard>,
}

impl Wire {
    /// Writes a request, once it has travelled over the link.
    pub async fn send(&mut self, request: &[u8]) -> io::Result<()> {
        if let Some((end, local)) = &mut self.link {
            local.link_wait(end.request(request.len() as u64)).await;
        }
        match &mut self.io {
            Io::Stream(s) => s.write_all(request).await,
            Io::H2(lane) => lane.send(request).await,
        }
    }

    /// Writes what the socket takes at once (nothing over an emulated
    /// link, whose travel time comes first, over TLS or HTTP/2, or on any
    /// error: the async send that follows meets it again); returns the
    /// bytes written.
    pub fn try_send(&mut self, request: &[u8]) -> usize {
        match (&self.io, &self.link) {
            (Io::Stream(s), None) => s
                .plain()
                .map_or(0, |tcp| tcp.try_write(request).unwrap_or(0)),
            _ => 0,
        }
    }

    /// Reads into `buf`'s spare capacity, as `read_buf` does.
    pub async fn read_buf(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        let s = match &mut self.io {
            Io::Stream(s) => s,
            Io::H2(lane) => return lane.read_buf(buf).await,
        };
        let Some((end, local)) = &mut self.link else {
            return s.read_buf(buf).await;
        };
        let n = s.take(end.room()).read_buf(buf).await?;
        hold(end, local, n).await;
        Ok(n)
    }

    /// Reads into `buf`, as `read` does.
    pub async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let s = match &mut self.io {
            Io::Stream(s) => s,
            Io::H2(lane) => return lane.read(buf).await,
        };
        let Some((end, local)) = &mut self.link else {
            return s.read(buf).await;
        };
        let room = usize::try_from(end.room()).map_or(buf.len(), |r| r.min(buf.len()));
        let n = s.read(&mut buf[..room]).await?;
        hold(end, local, n).await;
        Ok(n)
    }
}

/// Holds `n` bytes just read for as long as the link would have taken.
async fn hold(end: &mut End, local: &Local, n: usize) {
    if n > 0 {
        local.link_wait(end.pass(n as u64)).await;
    }
}

pub struct Conn {
    pub wire: Wire,
    pub target: Target,
    uses: u32,
    /// Transactions this connection may carry before the robot closes it.
    limit: u32,
    idle_since: Instant,
    /// When the transaction it serves got it: an idle connection taken,
    /// or the start of the connect for a new one. Web Polygraph's response
    /// time starts here, so a wait for a free connection is not in it.
    pub held_since: Instant,
    /// Request, then response head (and the body bytes read with it).
    pub buf: Vec<u8>,
    /// The request's URL path, kept to be reused.
    pub path: String,
}

impl Conn {
    /// Counts a finished transaction; the connection if it may carry
    /// another (`keep_alive`: the reply allows it). Its driver runs the
    /// next one at once, so that one holds it from now.
    pub fn reuse(mut self, keep_alive: bool) -> Option<Conn> {
        self.uses += 1;
        self.held_since = Instant::now();
        (keep_alive && self.uses < self.limit && self.usable()).then_some(self)
    }

    /// An HTTP/2 lane whose connection ended or is used up is not.
    fn usable(&self) -> bool {
        match &self.wire.io {
            Io::Stream(..) => true,
            Io::H2(lane) => lane.conn.usable(),
        }
    }

    fn new(wire: Wire, target: Target, limit: u32, held_since: Instant) -> Conn {
        Conn {
            wire,
            target,
            uses: 0,
            limit,
            idle_since: Instant::now(),
            held_since,
            buf: Vec::with_capacity(HEAD_CHUNK),
            path: String::new(),
        }
    }
}

/// One robot's connection slots: drivers (tasks each holding one slot)
/// plus idle connections never exceed the robot's `max_conns`.
pub struct Pool {
    /// The robot's own address.
    ip: Ipv4Addr,
    /// Draws each connection's reuse limit and seeds its link's draws.
    rng: RefCell<SimRng>,
    idle: RefCell<Vec<Conn>>,
    /// Live HTTP/2 connections, by target: new lanes open on them.
    h2: RefCell<Vec<(Target, Rc<H2Conn>)>>,
    /// HTTP/2 connections being opened, by target: a request for the same
    /// target waits for it instead of opening another, as a browser does.
    h2_opening: RefCell<Vec<(Target, Rc<Notify>)>>,
    /// Slots held by tasks running transactions.
    pub drivers: Cell<u32>,
}

impl Pool {
    pub fn new(ip: Ipv4Addr, rng: SimRng) -> Pool {
        Pool {
            ip,
            rng: RefCell::new(rng),
            idle: RefCell::new(Vec::new()),
            h2: RefCell::new(Vec::new()),
            h2_opening: RefCell::new(Vec::new()),
            drivers: Cell::new(0),
        }
    }

    /// Connections open or in use.
    pub fn open(&self) -> u32 {
        self.drivers.get() + self.idle.borrow().len() as u32
    }

    /// Takes a fresh idle connection to `target`, closing stale ones.
    pub fn take_idle(&self, target: Target, keep_alive: Duration) -> Option<Conn> {
        let mut idle = self.idle.borrow_mut();
        idle.retain(|c| c.idle_since.elapsed() < keep_alive && c.usable());
        let i = idle.iter().position(|c| c.target == target)?;
        let mut conn = idle.swap_remove(i);
        conn.held_since = Instant::now();
        Some(conn)
    }

    /// Keeps `conn` for a later request.
    pub fn put_idle(&self, mut conn: Conn) {
        conn.idle_since = Instant::now();
        if let Io::H2(lane) = &conn.wire.io {
            lane.conn.idle_since.set(conn.idle_since);
        }
        self.idle.borrow_mut().push(conn);
    }

    /// Closes the connection idle longest, if any: at the connection limit
    /// with only idle connections to other servers, as a browser would.
    pub fn close_oldest_idle(&self) -> bool {
        let mut idle = self.idle.borrow_mut();
        !idle.is_empty() && {
            idle.remove(0);
            true
        }
    }

    /// A live HTTP/2 connection to `target`, forgetting those that ended,
    /// are used up, or sat without a lane for the keep-alive time.
    fn live_h2(&self, target: Target, keep_alive: Duration) -> Option<Rc<H2Conn>> {
        let mut list = self.h2.borrow_mut();
        list.retain(|(_, c)| {
            c.usable() && (Rc::strong_count(c) > 1 || c.idle_since.get().elapsed() < keep_alive)
        });
        list.iter()
            .find(|(t, _)| *t == target)
            .map(|(_, c)| c.clone())
    }

    /// Opens a connection to `target` from the robot's address for a
    /// request to origin server `server` (its name is the TLS server
    /// name; through a forward proxy, its address is the tunnel's end).
    /// Over HTTP/2, a new lane on a live connection when there is one.
    pub async fn connect(
        &self,
        clients: &Rc<Clients>,
        target: Target,
        server: u32,
    ) -> Result<Conn, ErrorKind> {
        let began = Instant::now();
        let shared = clients.shared();
        let w = &shared.workload;
        let h2 = w.robots.http == HttpVersion::Http2;
        // Held while this opens an HTTP/2 connection to `target`.
        let mut _opening = None;
        if h2 {
            loop {
                if let Some(c) = self.live_h2(target, w.timeouts.keep_alive.0) {
                    return Ok(Conn::new(lane_wire(&c), target, u32::MAX, began));
                }
                let other = self
                    .h2_opening
                    .borrow()
                    .iter()
                    .find(|(t, _)| *t == target)
                    .map(|(_, n)| n.clone());
                match other {
                    // Its outcome, then look again (a failed one leaves
                    // this request to open its own).
                    Some(done) => done.notified().await,
                    None => break,
                }
            }
            _opening = Some(Opening::new(self, target));
        }
        let (addr, tunnel) = match (target, shared.via.addr()) {
            (Target::Proxy, Some(a)) => (a, false),
            (Target::Proxy, None) => unreachable!("proxy target only with a proxy"),
            // A forward proxy carries TLS to a server in a tunnel.
            (Target::Server(_), Some(a)) => (a, true),
            (Target::Server(i), None) => (shared.servers[i as usize], false),
        };
        let mut tcp = self.tcp(clients, addr).await?;
        let limit_timer = began + w.timeouts.connect.0;
        if tunnel {
            let t0 = Instant::now();
            let authority = &shared.server_hosts[server as usize];
            within(limit_timer, open_tunnel(&mut tcp, authority)).await?;
            let us = t0.elapsed().as_micros() as u64;
            clients.local.stats.borrow_mut().record_tunnel(us);
        }
        let stream = match &shared.tls {
            Some(tls) if w.robots.tls => {
                let t0 = Instant::now();
                let name = cacheoff_workload::server_name(server as usize);
                let s = within(limit_timer, async {
                    cacheoff_tls::connect(&tls.client, &name, tcp)
                        .await
                        .map_err(|_| ErrorKind::TlsFailed)
                })
                .await?;
                let us = t0.elapsed().as_micros() as u64;
                clients
                    .local
                    .stats
                    .borrow_mut()
                    .record_tls_handshake(us, s.resumed());
                s
            }
            _ => Stream::Plain(tcp),
        };
        let open = OpenGuard::new(clients);
        let (limit, link) = {
            let mut rng = self.rng.borrow_mut();
            let limit = (w.robots.conn_reuse.sample(&mut *rng) as u32).max(1);
            let link = w.robots.link.as_ref().map(|l| {
                let end = End::new(Link::new(l), seeded(rng.gen()));
                (end, clients.local.clone())
            });
            (limit, link)
        };
        if h2 {
            if !w.robots.tls || stream.alpn() == Some(cacheoff_tls::ALPN_H2) {
                let scheme = if w.robots.tls { "https" } else { "http" };
                let c = H2Conn::handshake(stream, scheme, limit, open)
                    .await
                    .map_err(|_| ErrorKind::ConnReset)?;
                let c = Rc::new(c);
                self.h2.borrow_mut().push((target, c.clone()));
                return Ok(Conn::new(lane_wire(&c), target, u32::MAX, began));
            }
            clients.local.stats.borrow_mut().counters.h2_refused += 1;
        }
        let wire = Wire {
            io: Io::Stream(stream),
            link,
            _open: Some(open),
        };
        Ok(Conn::new(wire, target, limit, began))
    }

    /// A TCP connection to `addr` from the robot's address, counted.
    async fn tcp(&self, clients: &Rc<Clients>, addr: SocketAddr) -> Result<TcpStream, ErrorKind> {
        let shared = clients.shared();
        let socket = match addr {
            SocketAddr::V4(_) => TcpSocket::new_v4(),
            SocketAddr::V6(_) => TcpSocket::new_v6(),
        }
        .map_err(|e| {
            crate::fds::note_io_error(&e);
            ErrorKind::ConnectFailed
        })?;
        if addr.is_ipv4() {
            // Each robot sends from its own address; the port is chosen at
            // connect time, per destination, instead of reserving one per
            // bind.
            set_bind_address_no_port(&socket);
            socket
                .bind(SocketAddr::new(self.ip.into(), 0))
                .map_err(|_| ErrorKind::ConnectFailed)?;
        }
        let timeouts = &shared.workload.timeouts;
        let stream = match tokio::time::timeout(timeouts.connect.0, socket.connect(addr)).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                crate::fds::note_io_error(&e);
                return Err(ErrorKind::ConnectFailed);
            }
            Err(_) => return Err(ErrorKind::ConnectTimeout),
        };
        let _ = stream.set_nodelay(true);
        let mut stats = clients.local.stats.borrow_mut();
        stats.counters.conns_opened += 1;
        stats.firsts.record_conn(shared.secs_at(Instant::now()));
        Ok(stream)
    }
}

/// An HTTP/2 connection being opened by one request; the requests for
/// the same target waiting on it are woken when it is dropped (opened,
/// failed or abandoned).
struct Opening<'a> {
    pool: &'a Pool,
    target: Target,
    done: Rc<Notify>,
}

impl<'a> Opening<'a> {
    fn new(pool: &'a Pool, target: Target) -> Opening<'a> {
        let done = Rc::new(Notify::new());
        pool.h2_opening.borrow_mut().push((target, done.clone()));
        Opening { pool, target, done }
    }
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        self.pool
            .h2_opening
            .borrow_mut()
            .retain(|(t, n)| !(*t == self.target && Rc::ptr_eq(n, &self.done)));
        self.done.notify_waiters();
    }
}

fn lane_wire(c: &Rc<H2Conn>) -> Wire {
    Wire {
        io: Io::H2(c.lane()),
        link: None,
        _open: None,
    }
}

/// `step` unless the connect timeout (ending at `deadline`) passes first.
async fn within<T>(
    deadline: Instant,
    step: impl std::future::Future<Output = Result<T, ErrorKind>>,
) -> Result<T, ErrorKind> {
    tokio::time::timeout_at(deadline.into(), step)
        .await
        .unwrap_or(Err(ErrorKind::ConnectTimeout))
}

/// Asks the forward proxy for a tunnel to `authority` (`host:port`) and
/// reads its answer: a `2xx` head, after which the bytes are the server's.
async fn open_tunnel(tcp: &mut TcpStream, authority: &str) -> Result<(), ErrorKind> {
    let request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n");
    tcp.write_all(request.as_bytes())
        .await
        .map_err(|_| ErrorKind::TunnelRefused)?;
    let mut head = Vec::with_capacity(512);
    loop {
        // One byte at a time past what a head needs would be slow; the
        // proxy sends nothing after its head until we speak TLS, so
        // reading what is there cannot take the server's bytes.
        if tcp
            .read_buf(&mut head)
            .await
            .map_err(|_| ErrorKind::TunnelRefused)?
            == 0
        {
            return Err(ErrorKind::TunnelRefused);
        }
        match cacheoff_http::response::parse_response_within(&head, true, false, 64 * 1024) {
            Ok(Some(h)) if (200..300).contains(&h.status) && h.head_len == head.len() => {
                return Ok(())
            }
            Ok(Some(_)) | Err(_) => return Err(ErrorKind::TunnelRefused),
            Ok(None) => {}
        }
    }
}

fn set_bind_address_no_port(socket: &TcpSocket) {
    use std::os::fd::AsRawFd;
    let one: libc::c_int = 1;
    // SAFETY: valid socket descriptor and option value; failure only loses
    // the optimisation.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}
