//! The protocol between a coordinator and its agents: one JSON object per
//! line over TCP, both ways. Snapshots carry their histograms in
//! HdrHistogram's compressed form (`cacheoff_stats::WireSnapshot`).

use cacheoff_agent::Jump;
use cacheoff_stats::WireSnapshot;
use cacheoff_workload::Workload;
use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Changes whenever a message changes meaning.
pub const PROTOCOL: u32 = 2;

/// The longest line either side accepts (a snapshot is a few KB; a
/// `Prepare` carries a workload with its tables).
const MAX_LINE: u64 = 16 << 20;

/// How long a peer may take to accept one message.
const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// How robots reach the servers, as the coordinator tells its agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", tag = "mode", content = "addr")]
pub enum ViaSpec {
    Direct,
    Proxy(SocketAddr),
    Surrogate(SocketAddr),
}

/// What the coordinator tells an agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum ToAgent {
    Hello {
        version: String,
        protocol: u32,
        /// How long the coordinator may still take to reach other agents:
        /// this one waits that much longer for its share.
        #[serde(default)]
        wait_s: f64,
    },
    Prepare(Box<Prepare>),
    /// What the agent's clock reads (it answers [`FromAgent::Clock`]).
    Clock,
    /// Every origin server's address, by index: the agent checks them
    /// against what it allows ([`FromAgent::Accepted`] or a refusal).
    Servers {
        servers: Vec<SocketAddr>,
    },
    /// The start in the coordinator's clock, with the agent's clock
    /// offset to it as measured, and how far hosts' clocks may still
    /// differ.
    Start {
        start_unix: f64,
        clock_offset_s: f64,
        clock_slack_s: f64,
    },
    /// A goal phase ends early.
    Jump(Jump),
    /// The coordinator is alive (an agent that hears nothing for an
    /// interval stops).
    Ping,
    /// Stop the run now (drain and send the final snapshot).
    Stop,
}

/// An agent's share of one run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Prepare {
    pub run_id: String,
    pub workload: Workload,
    /// [`workload_digest`] of `workload` as the coordinator wrote it.
    pub workload_digest: String,
    pub via: ViaSpec,
    /// The run's workers this agent runs, `[first, end)`, of `total_workers`.
    pub workers: [u32; 2],
    pub total_workers: u32,
    /// The origin servers this agent runs, `[first, end)`.
    pub servers: [u32; 2],
    pub nonce: u32,
}

/// What an agent tells the coordinator.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "snake_case")]
pub enum FromAgent {
    Welcome {
        version: String,
        protocol: u32,
        /// Its clock when it answered, Unix seconds.
        now_unix: f64,
        /// Worker threads it runs robots on.
        threads: u32,
        host_ip: Option<Ipv4Addr>,
    },
    Clock {
        now_unix: f64,
    },
    /// It will not take part (busy, another version, a bad workload).
    Refused {
        reason: String,
    },
    /// Its origin servers listen here, in index order.
    Prepared {
        servers: Vec<SocketAddr>,
    },
    /// It takes the run's servers and waits for the start.
    Accepted,
    /// One interval merged over its workers: schedule interval `index`,
    /// lasting `duration_s` of schedule time.
    Interval {
        index: u32,
        duration_s: f64,
        snap: Box<WireSnapshot>,
    },
    Warn {
        message: String,
    },
    /// Its share ended: its workers' plan digests (by worker index), and
    /// the error that ended it early, if one did.
    Done {
        digests: Vec<(u32, u64)>,
        interrupted: bool,
        error: Option<String>,
    },
    Pong,
}

/// A digest of a workload as JSON, so both ends can tell they mean the
/// same one (FNV-1a, 64 bits, hex).
pub fn workload_digest(w: &Workload) -> String {
    let json = serde_json::to_vec(w).expect("a workload serializes");
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in json {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[derive(Debug, thiserror::Error)]
pub enum WireError {
    #[error("connection closed")]
    Closed,
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("a message longer than {MAX_LINE} bytes")]
    TooLong,
    #[error("not a message of this protocol: {0}")]
    Bad(String),
}

impl WireError {
    pub fn is_timeout(&self) -> bool {
        matches!(self, WireError::Io(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut))
    }
}

/// What a link reads from: the socket itself, or TLS over it.
enum ReadHalf {
    Plain(TcpStream),
    Tls(cacheoff_tls::blocking::TlsReader),
}

impl ReadHalf {
    fn set_read_timeout(&self, t: Option<Duration>) -> std::io::Result<()> {
        match self {
            ReadHalf::Plain(s) => s.set_read_timeout(t),
            ReadHalf::Tls(r) => r.set_read_timeout(t),
        }
    }
}

impl Read for ReadHalf {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            ReadHalf::Plain(s) => s.read(buf),
            ReadHalf::Tls(r) => r.read(buf),
        }
    }
}

enum WriteHalf {
    Plain(TcpStream),
    Tls(cacheoff_tls::blocking::TlsWriter),
}

/// The reading half of a connection.
pub struct Reader {
    inner: BufReader<ReadHalf>,
    line: Vec<u8>,
}

/// The writing half, shared by whoever needs to send.
#[derive(Clone)]
pub struct Writer(Arc<Mutex<WriteHalf>>);

/// A link in the clear (`--insecure`, or a peer refused before TLS).
pub fn split(stream: TcpStream) -> std::io::Result<(Reader, Writer)> {
    let _ = stream.set_nodelay(true);
    let w = stream.try_clone()?;
    Ok(halves(ReadHalf::Plain(stream), WriteHalf::Plain(w)))
}

/// A link over TLS, its handshake done.
pub(crate) fn split_tls((r, w): cacheoff_tls::blocking::Halves) -> (Reader, Writer) {
    halves(ReadHalf::Tls(r), WriteHalf::Tls(w))
}

fn halves(r: ReadHalf, w: WriteHalf) -> (Reader, Writer) {
    (
        Reader {
            inner: BufReader::new(r),
            line: Vec::new(),
        },
        Writer(Arc::new(Mutex::new(w))),
    )
}

/// What a reader keeps between messages: a rare large one (a workload)
/// is not held on to.
const KEPT_CAPACITY: usize = 64 << 10;

impl Reader {
    /// The next message; `timeout` bounds the wait for the whole of it,
    /// however it trickles in (`None`: forever).
    pub fn recv<T: for<'de> Deserialize<'de>>(
        &mut self,
        timeout: Option<Duration>,
    ) -> Result<T, WireError> {
        let deadline = timeout.map(|t| Instant::now() + t);
        loop {
            let left = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(WireError::Io(std::io::ErrorKind::TimedOut.into()));
                    }
                    Some(left)
                }
                None => None,
            };
            self.inner.get_ref().set_read_timeout(left)?;
            // A timeout may cut a line: what was read stays for the next call.
            let buf = self.inner.fill_buf()?;
            if buf.is_empty() {
                return Err(WireError::Closed);
            }
            let (took, ended) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len(), false),
            };
            self.line.extend_from_slice(&buf[..took]);
            self.inner.consume(took);
            if self.line.len() as u64 > MAX_LINE {
                self.line = Vec::new();
                return Err(WireError::TooLong);
            }
            if ended {
                break;
            }
        }
        let msg = serde_json::from_slice(&self.line).map_err(|e| WireError::Bad(e.to_string()));
        self.line.clear();
        self.line.shrink_to(KEPT_CAPACITY);
        msg
    }
}

impl Writer {
    pub fn send<T: Serialize>(&self, msg: &T) -> Result<(), WireError> {
        let mut line = serde_json::to_vec(msg).map_err(|e| WireError::Bad(e.to_string()))?;
        line.push(b'\n');
        let mut w = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *w {
            WriteHalf::Plain(s) => {
                s.set_write_timeout(Some(SEND_TIMEOUT))?;
                s.write_all(&line)?;
            }
            WriteHalf::Tls(t) => {
                t.set_write_timeout(Some(SEND_TIMEOUT))?;
                t.write_all(&line)?;
            }
        }
        Ok(())
    }

    /// Closes both directions (the reader sees the end).
    pub fn shutdown(&self) {
        let mut w = self.0.lock().unwrap_or_else(|p| p.into_inner());
        match &mut *w {
            WriteHalf::Plain(s) => {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
            WriteHalf::Tls(t) => t.shutdown(),
        }
    }
}
