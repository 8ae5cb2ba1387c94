//! The test CA: one self-signed authority and one server certificate it
//! signs for every name a run uses (the address map's zone as a wildcard,
//! `localhost`, the loopback addresses and any the caller adds). Products
//! under test are configured with the server certificate and key; robots
//! trust the CA and nothing else.

use crate::TlsError;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};

/// The CA certificate robots trust.
pub const CA_FILE: &str = "ca.pem";
/// The server certificate followed by the CA's (a full chain).
pub const CERT_FILE: &str = "server.pem";
/// The server certificate's private key (PKCS#8).
pub const KEY_FILE: &str = "server.key";

/// A test CA and its server certificate, as files in `dir`.
#[derive(Debug)]
pub struct Pki {
    pub dir: PathBuf,
    pub ca: CertificateDer<'static>,
    /// Server certificate, then the CA.
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

impl Pki {
    /// Makes a new CA and a server certificate for `names` (DNS names,
    /// wildcards or IP addresses) and writes them into `dir`.
    pub fn create(dir: &Path, names: &[String]) -> Result<Pki, TlsError> {
        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "cacheoff test CA");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate()?;
        let ca_cert = ca_params.self_signed(&ca_key)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let mut leaf = CertificateParams::new(names.to_vec())?;
        leaf.distinguished_name
            .push(DnType::CommonName, "cacheoff origin servers");
        let leaf_key = KeyPair::generate()?;
        let leaf_cert = leaf.signed_by(&leaf_key, &issuer)?;

        std::fs::create_dir_all(dir).map_err(|source| TlsError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        write(&dir.join(CA_FILE), &ca_cert.pem())?;
        write(
            &dir.join(CERT_FILE),
            &format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
        )?;
        write(&dir.join(KEY_FILE), &leaf_key.serialize_pem())?;
        Pki::load(dir)
    }

    /// Reads the CA, chain and key written by [`Pki::create`] (or any
    /// PEM files of those names).
    pub fn load(dir: &Path) -> Result<Pki, TlsError> {
        let ca = read_certs(&dir.join(CA_FILE))?
            .into_iter()
            .next()
            .expect("read_certs returns at least one");
        let chain = read_certs(&dir.join(CERT_FILE))?;
        let key_path = dir.join(KEY_FILE);
        let key = PrivateKeyDer::from_pem_file(&key_path).map_err(|e| pem(&key_path, "key", e))?;
        Ok(Pki {
            dir: dir.to_path_buf(),
            ca,
            chain,
            key,
        })
    }

    /// [`Pki::load`] if `dir` has a CA, else [`Pki::create`].
    pub fn load_or_create(dir: &Path, names: &[String]) -> Result<Pki, TlsError> {
        if dir.join(CA_FILE).exists() {
            Pki::load(dir)
        } else {
            Pki::create(dir, names)
        }
    }

    pub fn ca_path(&self) -> PathBuf {
        self.dir.join(CA_FILE)
    }
    pub fn cert_path(&self) -> PathBuf {
        self.dir.join(CERT_FILE)
    }
    pub fn key_path(&self) -> PathBuf {
        self.dir.join(KEY_FILE)
    }
}

fn write(path: &Path, text: &str) -> Result<(), TlsError> {
    std::fs::write(path, text).map_err(|source| TlsError::Io {
        path: path.to_path_buf(),
        source,
    })
}

pub(crate) fn pem(path: &Path, what: &'static str, e: rustls::pki_types::pem::Error) -> TlsError {
    match e {
        rustls::pki_types::pem::Error::Io(source) => TlsError::Io {
            path: path.to_path_buf(),
            source,
        },
        e => TlsError::Pem {
            path: path.to_path_buf(),
            what,
            detail: e.to_string(),
        },
    }
}

pub(crate) fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem(path, "certificate", e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem(path, "certificate", e))?;
    if certs.is_empty() {
        return Err(TlsError::Pem {
            path: path.to_path_buf(),
            what: "certificate",
            detail: "no CERTIFICATE block".into(),
        });
    }
    Ok(certs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_files_load_back_as_the_same_chain() {
        let dir = tempfile::tempdir().unwrap();
        let names = vec!["*.bench.tst".to_string(), "127.0.0.1".to_string()];
        let made = Pki::create(dir.path(), &names).unwrap();
        assert_eq!(made.chain.len(), 2);
        assert_eq!(made.chain[1], made.ca);
        let again = Pki::load_or_create(dir.path(), &[]).unwrap();
        assert_eq!(again.ca, made.ca, "an existing CA is kept");
        assert_eq!(again.chain, made.chain);
    }

    #[test]
    fn a_missing_or_broken_file_names_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let e = Pki::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains(CA_FILE), "{e}");
        std::fs::write(dir.path().join(CA_FILE), "not pem").unwrap();
        let e = Pki::load(dir.path()).unwrap_err().to_string();
        assert!(e.contains(CA_FILE) && e.contains("certificate"), "{e}");
    }
}
