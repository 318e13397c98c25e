//! HTTPS (`--tls-cert FILE --tls-key FILE`): the certificate chain and private key, PEM,
//! served with rustls and its ring provider (the one the model clients use), TLS 1.2 and
//! 1.3, HTTP/1.1.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::error::{Error, Result};
use swarm_util::error::Base as _;

/// The acceptor for `cert` (a PEM chain, the server's own first) and `key` (PEM).
pub fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor> {
    let bad = |path: &Path, what: &str, e: &dyn std::fmt::Display| {
        Error::usage(format!(
            "failed to read {what} from {}: {e}; give a PEM file",
            path.display()
        ))
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| bad(cert, "a certificate", &e))?
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| bad(cert, "a certificate", &e))?;
    if certs.is_empty() {
        return Err(bad(cert, "a certificate", &"it holds none"));
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| bad(key, "a private key", &e))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .map_err(|e| {
            Error::usage(format!(
                "failed to use the certificate {} with the key: {e}",
                cert.display()
            ))
        })?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}
