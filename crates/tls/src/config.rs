//! Client and server configurations. Both use ring's provider and the
//! safe default protocol versions (TLS 1.2 and 1.3), so what a product
//! negotiates is its choice, as with a browser.

use crate::{Pki, TlsError};
use rustls::client::Resumption;
use rustls::pki_types::CertificateDer;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::sync::Arc;

/// ALPN names (RFC 7301).
pub const ALPN_H2: &[u8] = b"h2";
pub const ALPN_HTTP1: &[u8] = b"http/1.1";

pub(crate) fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client that trusts `ca` alone, offers `alpn`, and resumes sessions
/// (tickets or IDs, up to 256 remembered) when `resume` is set.
pub fn client_config(
    ca: &CertificateDer<'static>,
    alpn: &[&[u8]],
    resume: bool,
) -> Result<Arc<ClientConfig>, TlsError> {
    let mut roots = RootCertStore::empty();
    roots.add(ca.clone())?;
    let mut cfg = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    cfg.resumption = if resume {
        Resumption::in_memory_sessions(256)
    } else {
        Resumption::disabled()
    };
    Ok(Arc::new(cfg))
}

/// A server presenting the PKI's chain, offering HTTP/2 then HTTP/1.1.
pub fn server_config(pki: &Pki) -> Result<Arc<ServerConfig>, TlsError> {
    let mut cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(pki.chain.clone(), pki.key.clone_key())?;
    cfg.alpn_protocols = vec![ALPN_H2.to_vec(), ALPN_HTTP1.to_vec()];
    Ok(Arc::new(cfg))
}
