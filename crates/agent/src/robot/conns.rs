//! A robot's connections: opening them from the robot's own address,
//! keeping idle ones for reuse, and the limits on both; with `robots.link`,
//! each carries the robot's end of the emulated link ([`Wire`]).

use crate::link::{End, Link};
use crate::local::Clients;
use cacheoff_base::rng::{seeded, Rng, SimRng};
use cacheoff_stats::ErrorKind;
use std::cell::{Cell, RefCell};
use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::rc::Rc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// Head reads (and the body bytes that come with them).
pub const HEAD_CHUNK: usize = 4 * 1024;

/// Where a connection goes: the proxy, or an origin server by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Proxy,
    Server(u32),
}

/// A connection's socket and, with `robots.link`, the robot's end of the
/// emulated link (the same [`End`] an origin server keeps for
/// `servers.link`): a request waits out its travel before it is written,
/// and response bytes are read no further than the current slow-start
/// round and held for the round's wait as they arrive.
pub struct Wire {
    stream: TcpStream,
    link: Option<End>,
}

impl Wire {
    /// Writes a request, once it has travelled over the link.
    pub async fn send(&mut self, request: &[u8]) -> io::Result<()> {
        if let Some(end) = &mut self.link {
            tokio::time::sleep(end.request(request.len() as u64)).await;
        }
        self.stream.write_all(request).await
    }

    /// Writes what the socket takes at once (nothing over an emulated
    /// link, whose travel time comes first, or on any error: the async
    /// send that follows meets it again); returns the bytes written.
    pub fn try_send(&mut self, request: &[u8]) -> usize {
        if self.link.is_some() {
            return 0;
        }
        self.stream.try_write(request).unwrap_or(0)
    }

    /// Reads into `buf`'s spare capacity, as `read_buf` does.
    pub async fn read_buf(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        let Some(end) = &mut self.link else {
            return self.stream.read_buf(buf).await;
        };
        let n = (&mut self.stream).take(end.room()).read_buf(buf).await?;
        hold(end, n).await;
        Ok(n)
    }

    /// Reads into `buf`, as `read` does.
    pub async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(end) = &mut self.link else {
            return self.stream.read(buf).await;
        };
        let room = usize::try_from(end.room()).map_or(buf.len(), |r| r.min(buf.len()));
        let n = self.stream.read(&mut buf[..room]).await?;
        hold(end, n).await;
        Ok(n)
    }
}

/// Holds `n` bytes just read for as long as the link would have taken.
async fn hold(end: &mut End, n: usize) {
    if n > 0 {
        let wait = end.pass(n as u64);
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
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
    clients: Rc<Clients>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.clients
            .open_conns
            .set(self.clients.open_conns.get() - 1);
    }
}

impl Conn {
    /// Counts a finished transaction; the connection if it may carry
    /// another (`keep_alive`: the reply allows it). Its driver runs the
    /// next one at once, so that one holds it from now.
    pub fn reuse(mut self, keep_alive: bool) -> Option<Conn> {
        self.uses += 1;
        self.held_since = Instant::now();
        (keep_alive && self.uses < self.limit).then_some(self)
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
    /// Slots held by tasks running transactions.
    pub drivers: Cell<u32>,
}

impl Pool {
    pub fn new(ip: Ipv4Addr, rng: SimRng) -> Pool {
        Pool {
            ip,
            rng: RefCell::new(rng),
            idle: RefCell::new(Vec::new()),
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
        idle.retain(|c| c.idle_since.elapsed() < keep_alive);
        let i = idle.iter().position(|c| c.target == target)?;
        let mut conn = idle.swap_remove(i);
        conn.held_since = Instant::now();
        Some(conn)
    }

    /// Keeps `conn` for a later request.
    pub fn put_idle(&self, mut conn: Conn) {
        conn.idle_since = Instant::now();
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

    /// Opens a connection to `target` from the robot's address.
    pub async fn connect(&self, clients: &Rc<Clients>, target: Target) -> Result<Conn, ErrorKind> {
        let began = Instant::now();
        let shared = clients.shared();
        let addr: SocketAddr = match target {
            Target::Proxy => shared.via.addr().expect("proxy target only with a proxy"),
            Target::Server(i) => shared.servers[i as usize],
        };
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
        let robots = &shared.workload.robots;
        let mut rng = self.rng.borrow_mut();
        let limit = (robots.conn_reuse.sample(&mut *rng) as u32).max(1);
        let link = robots
            .link
            .as_ref()
            .map(|l| End::new(Link::new(l), seeded(rng.gen())));
        drop(rng);
        {
            let mut stats = clients.local.stats.borrow_mut();
            stats.counters.conns_opened += 1;
            stats.firsts.record_conn(shared.secs_at(Instant::now()));
        }
        clients.open_conns.set(clients.open_conns.get() + 1);
        Ok(Conn {
            wire: Wire { stream, link },
            target,
            uses: 0,
            limit,
            idle_since: Instant::now(),
            held_since: began,
            buf: Vec::with_capacity(HEAD_CHUNK),
            path: String::new(),
            clients: clients.clone(),
        })
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
