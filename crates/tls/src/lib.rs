//! TLS for cacheoff: a test certificate authority and the server
//! certificate it signs (`pki`), the client and server configurations
//! robots, origin servers and products use (`config`), and one stream type
//! for plain and TLS connections (`stream`); a fleet's mutual TLS
//! (`fleet`: the fleet CA from files or a shared secret, one certificate
//! per role) over blocking sockets that one thread reads while another
//! writes (`blocking`).
//!
//! Ownership: nothing here knows workloads or runs; callers pass the names
//! a certificate covers and the protocols a connection offers.

pub mod blocking;
mod config;
mod fleet;
mod pki;
mod stream;

pub use config::{client_config, server_config, ALPN_H2, ALPN_HTTP1};
pub use fleet::{FleetKeys, Side, AGENT_NAME, FLEET_DIR, MIN_SECRET};
pub use pki::{Pki, CA_FILE, CERT_FILE, KEY_FILE};
pub use rustls::{ClientConfig, ServerConfig};
pub use stream::{accept, connect, Stream};

/// Why the test CA could not be made or read.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: not a PEM {what} ({detail})")]
    Pem {
        path: std::path::PathBuf,
        what: &'static str,
        detail: String,
    },
    #[error("making the test certificates: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    #[error("TLS peer verification: {0}")]
    Verifier(String),
    #[error("{path}: {why}")]
    Secret {
        path: std::path::PathBuf,
        why: String,
    },
}
