//! TLS over a blocking `TcpStream` that one thread reads while others
//! write, as the fleet's links do (a reader thread per agent, a pinger and
//! the coordinator writing). rustls's own `StreamOwned` cannot be split,
//! so both halves share the connection state under a lock held only for
//! in-memory work and the socket writes it owes; each half has its own
//! clone of the socket, so a blocked read never holds up a write.
//!
//! The handshake runs against one deadline as a whole (not per read): a
//! peer that sends a byte at a time is cut when the deadline passes.

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, Connection, ServerConfig, ServerConnection};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

type Shared = Arc<Mutex<Connection>>;

fn lock(c: &Shared) -> MutexGuard<'_, Connection> {
    c.lock().unwrap_or_else(|p| p.into_inner())
}

fn invalid(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// The reading half: plaintext as `Read`.
pub struct TlsReader {
    conn: Shared,
    sock: TcpStream,
    wsock: TcpStream,
    plain: Vec<u8>,
    at: usize,
    eof: bool,
    raw: Box<[u8]>,
}

/// The writing half: plaintext as `Write`, sent at once.
pub struct TlsWriter {
    conn: Shared,
    sock: TcpStream,
}

/// Both halves of a link once its handshake is done.
pub type Halves = (TlsReader, TlsWriter);

/// The handshake as a client naming `name`, over `tcp`, by `deadline`.
pub fn client(
    tcp: TcpStream,
    cfg: Arc<ClientConfig>,
    name: &str,
    deadline: Instant,
) -> io::Result<Halves> {
    let name = ServerName::try_from(name.to_string())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{name}: {e}")))?;
    let conn = ClientConnection::new(cfg, name).map_err(invalid)?;
    handshake(tcp, conn.into(), deadline)
}

/// The handshake as a server over `tcp`, by `deadline`.
pub fn server(tcp: TcpStream, cfg: Arc<ServerConfig>, deadline: Instant) -> io::Result<Halves> {
    let conn = ServerConnection::new(cfg).map_err(invalid)?;
    handshake(tcp, conn.into(), deadline)
}

fn remaining(deadline: Instant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(io::Error::new(
            io::ErrorKind::TimedOut,
            "the TLS handshake did not finish in time",
        ));
    }
    Ok(left)
}

fn handshake(mut tcp: TcpStream, mut conn: Connection, deadline: Instant) -> io::Result<Halves> {
    while conn.is_handshaking() {
        while conn.wants_write() {
            tcp.set_write_timeout(Some(remaining(deadline)?))?;
            conn.write_tls(&mut tcp)?;
        }
        if !conn.is_handshaking() {
            break;
        }
        tcp.set_read_timeout(Some(remaining(deadline)?))?;
        if conn.read_tls(&mut tcp)? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the peer closed the connection during the TLS handshake",
            ));
        }
        if let Err(e) = conn.process_new_packets() {
            // Tell the peer why (the alert is queued) before giving up.
            let _ = conn.write_tls(&mut tcp);
            return Err(invalid(e));
        }
    }
    // What the handshake still owes (a client's last flight).
    while conn.wants_write() {
        tcp.set_write_timeout(Some(remaining(deadline)?))?;
        conn.write_tls(&mut tcp)?;
    }
    tcp.set_read_timeout(None)?;
    tcp.set_write_timeout(None)?;
    let wsock = tcp.try_clone()?;
    let conn = Arc::new(Mutex::new(conn));
    Ok((
        TlsReader {
            conn: conn.clone(),
            sock: tcp.try_clone()?,
            wsock: wsock.try_clone()?,
            plain: Vec::new(),
            at: 0,
            eof: false,
            raw: vec![0; 16 << 10].into_boxed_slice(),
        },
        TlsWriter { conn, sock: wsock },
    ))
}

impl TlsReader {
    /// Bounds each wait for the peer's bytes (`None`: for ever).
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.sock.set_read_timeout(t)
    }

    /// Names in the peer's certificate are not needed: the fleet CA and
    /// the key usage say who it is. This says whether it sent one.
    pub fn peer_has_certificate(&self) -> bool {
        lock(&self.conn)
            .peer_certificates()
            .is_some_and(|c| !c.is_empty())
    }
}

/// Moves what plaintext `c` holds into `plain`; `eof` once the peer
/// said goodbye.
fn drain(c: &mut Connection, plain: &mut Vec<u8>, eof: &mut bool) -> io::Result<()> {
    let mut chunk = [0u8; 4096];
    loop {
        match c.reader().read(&mut chunk) {
            Ok(0) => {
                *eof = true;
                return Ok(());
            }
            Ok(k) => plain.extend_from_slice(&chunk[..k]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

impl Read for TlsReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.at < self.plain.len() {
                let n = buf.len().min(self.plain.len() - self.at);
                buf[..n].copy_from_slice(&self.plain[self.at..self.at + n]);
                self.at += n;
                if self.at == self.plain.len() {
                    self.plain.clear();
                    self.at = 0;
                }
                return Ok(n);
            }
            if self.eof {
                return Ok(0);
            }
            // Plaintext may have come with the handshake's last records.
            drain(&mut lock(&self.conn), &mut self.plain, &mut self.eof)?;
            if !self.plain.is_empty() || self.eof {
                continue;
            }
            let n = self.sock.read(&mut self.raw)?;
            let mut c = lock(&self.conn);
            if n == 0 {
                self.eof = true;
                continue;
            }
            let mut fresh = &self.raw[..n];
            while !fresh.is_empty() {
                c.read_tls(&mut fresh)?;
                let state = c.process_new_packets().map_err(invalid)?;
                drain(&mut c, &mut self.plain, &mut self.eof)?;
                if state.peer_has_closed() {
                    self.eof = true;
                }
            }
            // Replies the protocol owes (key updates, alerts).
            while c.wants_write() {
                c.write_tls(&mut self.wsock)?;
            }
        }
    }
}

impl TlsWriter {
    /// Bounds each wait for the peer to take bytes.
    pub fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.sock.set_write_timeout(t)
    }

    /// Says goodbye (`close_notify`) and closes both directions.
    pub fn shutdown(&mut self) {
        let mut c = lock(&self.conn);
        c.send_close_notify();
        while c.wants_write() {
            if c.write_tls(&mut self.sock).is_err() {
                break;
            }
        }
        let _ = self.sock.shutdown(std::net::Shutdown::Both);
    }
}

impl Write for TlsWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut c = lock(&self.conn);
        let n = c.writer().write(buf)?;
        while c.wants_write() {
            c.write_tls(&mut self.sock)?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut c = lock(&self.conn);
        while c.wants_write() {
            c.write_tls(&mut self.sock)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::{FleetKeys, Side, AGENT_NAME};
    use std::io::{BufRead, BufReader};
    use std::net::TcpListener;

    fn pair(agent: FleetKeys, coordinator: FleetKeys) -> (io::Result<Halves>, io::Result<Halves>) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let scfg = agent.server_config().unwrap();
        let srv = std::thread::spawn(move || server(l.accept().unwrap().0, scfg, deadline));
        let tcp = TcpStream::connect(addr).unwrap();
        let cli = client(
            tcp,
            coordinator.client_config().unwrap(),
            AGENT_NAME,
            deadline,
        );
        (srv.join().unwrap(), cli)
    }

    fn talk(srv: Halves, cli: Halves) {
        let (sr, mut sw) = srv;
        let (cr, mut cw) = cli;
        // Many lines each way at once, bigger than a TLS record.
        let big = "x".repeat(40_000);
        let echo = std::thread::spawn(move || {
            let mut r = BufReader::new(sr);
            for _ in 0..20 {
                let mut line = String::new();
                r.read_line(&mut line).unwrap();
                sw.write_all(line.as_bytes()).unwrap();
            }
            assert!(r.get_ref().peer_has_certificate());
        });
        let mut r = BufReader::new(cr);
        for i in 0..20 {
            cw.write_all(format!("{i} {big}\n").as_bytes()).unwrap();
            let mut line = String::new();
            r.read_line(&mut line).unwrap();
            assert_eq!(line, format!("{i} {big}\n"));
        }
        echo.join().unwrap();
        cw.shutdown();
    }

    #[test]
    fn one_shared_secret_makes_a_link_and_lines_cross_it_both_ways() {
        let s = b"a fleet secret of some length";
        let (srv, cli) = pair(
            FleetKeys::from_secret(s, Side::Agent).unwrap(),
            FleetKeys::from_secret(s, Side::Coordinator).unwrap(),
        );
        talk(srv.unwrap(), cli.unwrap());
    }

    #[test]
    fn another_secret_is_refused_on_both_ends() {
        let (srv, cli) = pair(
            FleetKeys::from_secret(b"the agents' own secret", Side::Agent).unwrap(),
            FleetKeys::from_secret(b"a stranger's guessed one", Side::Coordinator).unwrap(),
        );
        assert!(
            srv.is_err() && cli.is_err(),
            "{srv:?} {cli:?}",
            srv = srv.err(),
            cli = cli.err()
        );
    }

    #[test]
    fn files_from_one_fleet_link_and_another_fleet_s_do_not() {
        let one = tempfile::tempdir().unwrap();
        let two = tempfile::tempdir().unwrap();
        FleetKeys::create_dir(one.path()).unwrap();
        FleetKeys::create_dir(two.path()).unwrap();
        let (srv, cli) = pair(
            FleetKeys::load(one.path(), Side::Agent).unwrap(),
            FleetKeys::load(one.path(), Side::Coordinator).unwrap(),
        );
        talk(srv.unwrap(), cli.unwrap());
        let (srv, cli) = pair(
            FleetKeys::load(one.path(), Side::Agent).unwrap(),
            FleetKeys::load(two.path(), Side::Coordinator).unwrap(),
        );
        assert!(srv.is_err() && cli.is_err());
    }

    #[test]
    fn an_agent_s_certificate_cannot_act_as_a_coordinator() {
        // Files swapped: the agent's key presented as a client.
        let dir = tempfile::tempdir().unwrap();
        let (fleet, _) = FleetKeys::create_dir(dir.path()).unwrap();
        let swapped = tempfile::tempdir().unwrap();
        for (from, to) in [
            ("ca.pem", "ca.pem"),
            ("agent.pem", "coordinator.pem"),
            ("agent.key", "coordinator.key"),
            ("agent.pem", "agent.pem"),
            ("agent.key", "agent.key"),
        ] {
            std::fs::copy(fleet.join(from), swapped.path().join(to)).unwrap();
        }
        let (srv, _cli) = pair(
            FleetKeys::load(dir.path(), Side::Agent).unwrap(),
            FleetKeys::load(swapped.path(), Side::Coordinator).unwrap(),
        );
        let e = srv.err().expect("refused").to_string();
        assert!(
            e.to_lowercase().contains("usage") || e.contains("Eku"),
            "{e}"
        );
    }

    #[test]
    fn a_peer_that_never_finishes_the_handshake_is_cut_at_the_deadline() {
        let keys = FleetKeys::from_secret(b"0123456789abcdef", Side::Agent).unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let mut silent = TcpStream::connect(addr).unwrap();
        // One byte of a record header, then nothing.
        silent.write_all(&[0x16]).unwrap();
        let deadline = Instant::now() + Duration::from_millis(300);
        let e = server(
            l.accept().unwrap().0,
            keys.server_config().unwrap(),
            deadline,
        )
        .err()
        .expect("cut");
        assert!(
            matches!(
                e.kind(),
                io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
            ),
            "{e}"
        );
    }
}
