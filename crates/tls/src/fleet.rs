//! A fleet's credentials: agents and their coordinator authenticate each
//! other with mutual TLS 1.3 under one fleet CA. Either `cacheoff tls DIR`
//! made the CA and one certificate per role (`DIR/fleet/`: the CA's key
//! is not kept, so nobody can mint a third), or both ends derive the CA
//! from a shared secret and each signs a certificate of its own at start.
//!
//! Roles are told apart by extended key usage: an agent's certificate is
//! for servers only and a coordinator's for clients only, so a stolen
//! agent key cannot drive other agents. Names are fixed ([`AGENT_NAME`]):
//! an agent is whoever holds a fleet certificate, wherever it listens.

use crate::TlsError;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The subdirectory of `cacheoff tls DIR` that holds the fleet's files
/// (what a Kubernetes secret mounts).
pub const FLEET_DIR: &str = "fleet";
/// The name every agent's certificate carries, and the one a coordinator
/// asks for whatever address it dials.
pub const AGENT_NAME: &str = "agent.fleet.cacheoff";
const COORDINATOR_NAME: &str = "coordinator.fleet.cacheoff";
const CA_FILE: &str = "ca.pem";
/// The shortest shared secret accepted, in bytes.
pub const MIN_SECRET: usize = 16;
/// The longest secret file read.
const MAX_SECRET: u64 = 4096;

/// Which end of a fleet link a credential is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Agent,
    Coordinator,
}

impl Side {
    fn files(self) -> (&'static str, &'static str) {
        match self {
            Side::Agent => ("agent.pem", "agent.key"),
            Side::Coordinator => ("coordinator.pem", "coordinator.key"),
        }
    }
    fn name(self) -> &'static str {
        match self {
            Side::Agent => AGENT_NAME,
            Side::Coordinator => COORDINATOR_NAME,
        }
    }
    fn usage(self) -> ExtendedKeyUsagePurpose {
        match self {
            Side::Agent => ExtendedKeyUsagePurpose::ServerAuth,
            Side::Coordinator => ExtendedKeyUsagePurpose::ClientAuth,
        }
    }
}

/// One end's credentials: the fleet CA it trusts, and its own
/// certificate (chain) and key.
#[derive(Debug)]
pub struct FleetKeys {
    side: Side,
    ca: CertificateDer<'static>,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
}

fn ca_params(common_name: &str) -> Result<CertificateParams, TlsError> {
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    p.distinguished_name
        .push(DnType::CommonName, common_name.to_string());
    p.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    Ok(p)
}

fn leaf(side: Side, issuer: &Issuer<'_, KeyPair>) -> Result<(String, KeyPair), TlsError> {
    let mut p = CertificateParams::new(vec![side.name().to_string()])?;
    p.distinguished_name
        .push(DnType::CommonName, side.name().to_string());
    p.extended_key_usages = vec![side.usage()];
    p.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    let key = KeyPair::generate()?;
    Ok((p.signed_by(&key, issuer)?.pem(), key))
}

impl FleetKeys {
    /// Makes a fleet CA and one certificate per role in `dir/fleet/`,
    /// unless it holds them already; returns that directory and whether
    /// it was made now. The CA's key is dropped once both are signed.
    pub fn create_dir(dir: &Path) -> Result<(PathBuf, bool), TlsError> {
        let out = dir.join(FLEET_DIR);
        if out.join(CA_FILE).exists() {
            return Ok((out, false));
        }
        let params = ca_params("cacheoff fleet CA")?;
        let ca_key = KeyPair::generate()?;
        let ca_pem = params.self_signed(&ca_key)?.pem();
        let issuer = Issuer::new(params, ca_key);
        std::fs::create_dir_all(&out).map_err(|source| TlsError::Io {
            path: out.clone(),
            source,
        })?;
        for side in [Side::Agent, Side::Coordinator] {
            let (cert, key) = leaf(side, &issuer)?;
            let (cert_file, key_file) = side.files();
            write(&out.join(cert_file), &format!("{cert}{ca_pem}"), 0o644)?;
            write(&out.join(key_file), &key.serialize_pem(), 0o600)?;
        }
        // Last: its presence says the set is whole.
        write(&out.join(CA_FILE), &ca_pem, 0o644)?;
        Ok((out, true))
    }

    /// Reads `side`'s credentials from `dir/fleet/` or `dir` itself.
    pub fn load(dir: &Path, side: Side) -> Result<FleetKeys, TlsError> {
        let dir = if dir.join(FLEET_DIR).join(CA_FILE).exists() {
            dir.join(FLEET_DIR)
        } else {
            dir.to_path_buf()
        };
        let ca = crate::pki::read_certs(&dir.join(CA_FILE))?.remove(0);
        let (cert_file, key_file) = side.files();
        let chain = crate::pki::read_certs(&dir.join(cert_file))?;
        let key_path = dir.join(key_file);
        let key = PrivateKeyDer::from_pem_file(&key_path)
            .map_err(|e| crate::pki::pem(&key_path, "key", e))?;
        Ok(FleetKeys {
            side,
            ca,
            chain,
            key,
        })
    }

    /// Derives the fleet CA from the secret in `file` (at least
    /// [`MIN_SECRET`] bytes, surrounding white space ignored) and signs a
    /// certificate for `side` with it.
    pub fn from_secret_file(file: &Path, side: Side) -> Result<FleetKeys, TlsError> {
        let io = |source| TlsError::Io {
            path: file.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(file).map_err(io)?;
        if !meta.is_file() {
            return Err(TlsError::Secret {
                path: file.to_path_buf(),
                why: "not a regular file".into(),
            });
        }
        let mut raw = Vec::new();
        std::fs::File::open(file)
            .and_then(|f| f.take(MAX_SECRET + 1).read_to_end(&mut raw))
            .map_err(io)?;
        if raw.len() as u64 > MAX_SECRET {
            return Err(TlsError::Secret {
                path: file.to_path_buf(),
                why: format!("longer than {MAX_SECRET} bytes"),
            });
        }
        let secret = raw.trim_ascii();
        if secret.len() < MIN_SECRET {
            return Err(TlsError::Secret {
                path: file.to_path_buf(),
                why: format!(
                    "{} bytes; a fleet secret needs at least {MIN_SECRET} (e.g. `head -c 32 /dev/urandom | base64 > FILE`)",
                    secret.len()
                ),
            });
        }
        Self::from_secret(secret, side)
    }

    /// As [`FleetKeys::from_secret_file`], from the secret's bytes: the
    /// CA's Ed25519 key is HKDF-SHA256 of the secret, so both ends hold
    /// the same CA without ever sending it.
    pub fn from_secret(secret: &[u8], side: Side) -> Result<FleetKeys, TlsError> {
        let seed = derive_seed(secret);
        // PKCS#8 v1 for an Ed25519 private key (RFC 8410): a fixed
        // prefix, then the 32-byte seed.
        let mut der = vec![
            0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22,
            0x04, 0x20,
        ];
        der.extend_from_slice(&seed);
        let ca_key = KeyPair::try_from(&PrivatePkcs8KeyDer::from(der))?;
        let params = ca_params("cacheoff fleet CA (shared secret)")?;
        let ca_pem = params.self_signed(&ca_key)?.pem();
        let issuer = Issuer::new(params, ca_key);
        let (cert, key) = leaf(side, &issuer)?;
        let parse = |pem: &str| {
            CertificateDer::from_pem_slice(pem.as_bytes()).map_err(|e| TlsError::Pem {
                path: PathBuf::from("(derived)"),
                what: "certificate",
                detail: e.to_string(),
            })
        };
        let ca = parse(&ca_pem)?;
        Ok(FleetKeys {
            side,
            chain: vec![parse(&cert)?, ca.clone()],
            ca,
            key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        })
    }

    fn roots(&self) -> Result<Arc<RootCertStore>, TlsError> {
        let mut roots = RootCertStore::empty();
        roots.add(self.ca.clone())?;
        Ok(Arc::new(roots))
    }

    /// An agent's server side: TLS 1.3 only, a coordinator's certificate
    /// under the fleet CA required.
    pub fn server_config(&self) -> Result<Arc<ServerConfig>, TlsError> {
        assert_eq!(self.side, Side::Agent, "an agent's credentials");
        let verifier =
            WebPkiClientVerifier::builder_with_provider(self.roots()?, crate::config::provider())
                .build()
                .map_err(|e| TlsError::Verifier(e.to_string()))?;
        let cfg = ServerConfig::builder_with_provider(crate::config::provider())
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_client_cert_verifier(verifier)
            .with_single_cert(self.chain.clone(), self.key.clone_key())?;
        Ok(Arc::new(cfg))
    }

    /// A coordinator's client side: TLS 1.3 only, an agent's certificate
    /// under the fleet CA required, its own presented.
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, TlsError> {
        assert_eq!(self.side, Side::Coordinator, "a coordinator's credentials");
        let roots = Arc::try_unwrap(self.roots()?).unwrap_or_else(|r| (*r).clone());
        let cfg = ClientConfig::builder_with_provider(crate::config::provider())
            .with_protocol_versions(&[&rustls::version::TLS13])?
            .with_root_certificates(roots)
            .with_client_auth_cert(self.chain.clone(), self.key.clone_key())?;
        Ok(Arc::new(cfg))
    }
}

/// HKDF-SHA256 (RFC 5869) of the secret into a 32-byte key seed.
fn derive_seed(secret: &[u8]) -> [u8; 32] {
    use ring::hkdf;
    struct Len32;
    impl hkdf::KeyType for Len32 {
        fn len(&self) -> usize {
            32
        }
    }
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, b"cacheoff fleet v1").extract(secret);
    let mut seed = [0u8; 32];
    prk.expand(&[b"fleet CA key"], Len32)
        .and_then(|okm| okm.fill(&mut seed))
        .expect("32 bytes is a valid HKDF-SHA256 output length");
    seed
}

fn write(path: &Path, text: &str, mode: u32) -> Result<(), TlsError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|source| TlsError::Io {
            path: path.to_path_buf(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_or_missing_secret_is_refused_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("secret");
        std::fs::write(&f, "short\n").unwrap();
        let e = FleetKeys::from_secret_file(&f, Side::Agent)
            .unwrap_err()
            .to_string();
        assert!(e.contains("secret") && e.contains("at least 16"), "{e}");
        let e = FleetKeys::from_secret_file(&dir.path().join("none"), Side::Agent)
            .unwrap_err()
            .to_string();
        assert!(e.contains("none"), "{e}");
        let e = FleetKeys::from_secret_file(dir.path(), Side::Agent)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn the_fleet_files_are_made_once_and_load_for_each_side() {
        let dir = tempfile::tempdir().unwrap();
        let (out, made) = FleetKeys::create_dir(dir.path()).unwrap();
        assert!(made);
        let (_, again) = FleetKeys::create_dir(dir.path()).unwrap();
        assert!(!again, "an existing fleet is kept");
        let a = FleetKeys::load(dir.path(), Side::Agent).unwrap();
        let c = FleetKeys::load(&out, Side::Coordinator).unwrap();
        assert_eq!(a.ca, c.ca);
        a.server_config().unwrap();
        c.client_config().unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(out.join("agent.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "keys are the owner's alone");
        let names: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert!(
            !names
                .iter()
                .any(|n| n.starts_with("ca") && n.ends_with(".key")),
            "the CA's key is not kept: {names:?}"
        );
    }
}
