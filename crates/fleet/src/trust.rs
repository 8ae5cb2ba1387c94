//! Who a fleet link trusts: mutual TLS under the fleet's CA
//! (`cacheoff_tls::FleetKeys`, from `cacheoff tls DIR` or a shared
//! secret), or nobody checked at all (`--insecure`, which must be asked
//! for by name). Nothing of the protocol, not even the version, is said
//! before the peer has proven it belongs to the fleet.

use crate::wire::{self, Reader, Writer};
use cacheoff_tls::{ClientConfig, FleetKeys, ServerConfig, Side, TlsError, AGENT_NAME};
use std::net::TcpStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// Where a fleet's credentials come from, as the command line names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `--fleet-dir DIR`: the files `cacheoff tls DIR` made.
    Dir(PathBuf),
    /// `--secret-file F`: both ends derive the CA from one secret.
    Secret(PathBuf),
    /// `--insecure`: plaintext, any peer.
    Insecure,
}

/// What `--insecure` gives away, said wherever it is used.
pub const INSECURE_WARNING: &str = "--insecure: the fleet's links are plaintext and unauthenticated: anyone who reaches an agent's port can make it send traffic (within its --allow-target), read its version and tie it up; use --fleet-dir or --secret-file outside a sealed lab";

/// An agent's trust: whom it lets drive it.
#[derive(Clone)]
pub enum AgentTrust {
    Insecure,
    /// Its server side: a coordinator's certificate under the fleet CA
    /// required.
    Tls(Arc<ServerConfig>),
}

/// A coordinator's trust: which agents it will drive.
#[derive(Clone)]
pub enum CoordinatorTrust {
    Insecure,
    /// Its client side: an agent's certificate under the fleet CA
    /// required, its own presented.
    Tls(Arc<ClientConfig>),
}

fn keys(source: &Source, side: Side) -> Result<Option<FleetKeys>, TlsError> {
    Ok(match source {
        Source::Insecure => None,
        Source::Dir(d) => Some(FleetKeys::load(d, side)?),
        Source::Secret(f) => Some(FleetKeys::from_secret_file(f, side)?),
    })
}

impl AgentTrust {
    pub fn load(source: &Source) -> Result<AgentTrust, TlsError> {
        Ok(match keys(source, Side::Agent)? {
            None => AgentTrust::Insecure,
            Some(k) => AgentTrust::Tls(k.server_config()?),
        })
    }

    pub fn is_insecure(&self) -> bool {
        matches!(self, AgentTrust::Insecure)
    }

    /// A new connection: the peer proves it is the fleet's coordinator
    /// by `deadline`, or the link is refused.
    pub fn accept(&self, tcp: TcpStream, deadline: Instant) -> std::io::Result<(Reader, Writer)> {
        let _ = tcp.set_nodelay(true);
        match self {
            AgentTrust::Insecure => wire::split(tcp),
            AgentTrust::Tls(cfg) => Ok(wire::split_tls(cacheoff_tls::blocking::server(
                tcp,
                cfg.clone(),
                deadline,
            )?)),
        }
    }
}

impl CoordinatorTrust {
    pub fn load(source: &Source) -> Result<CoordinatorTrust, TlsError> {
        Ok(match keys(source, Side::Coordinator)? {
            None => CoordinatorTrust::Insecure,
            Some(k) => CoordinatorTrust::Tls(k.client_config()?),
        })
    }

    /// The agent proves it is one of the fleet's by `deadline`.
    pub fn connect(&self, tcp: TcpStream, deadline: Instant) -> std::io::Result<(Reader, Writer)> {
        let _ = tcp.set_nodelay(true);
        match self {
            CoordinatorTrust::Insecure => wire::split(tcp),
            CoordinatorTrust::Tls(cfg) => Ok(wire::split_tls(cacheoff_tls::blocking::client(
                tcp,
                cfg.clone(),
                AGENT_NAME,
                deadline,
            )?)),
        }
    }
}

impl std::fmt::Debug for AgentTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_insecure() {
            "insecure"
        } else {
            "mutual TLS"
        })
    }
}

impl std::fmt::Debug for CoordinatorTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CoordinatorTrust::Insecure => "insecure",
            CoordinatorTrust::Tls(_) => "mutual TLS",
        })
    }
}
