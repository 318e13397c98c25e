//! TLS to the database server, as libpq's `sslmode` asks for it: `disable`, `prefer` (the
//! default: TLS if the server offers it), `require`, `verify-ca` (the server's certificate
//! chains to the root certificate) and `verify-full` (and names the host connected to).
//! The root certificate is `sslrootcert` in the URL, else `PGSSLROOTCERT`, else
//! `~/.postgresql/root.crt`; with `require` and a root certificate there, the chain is
//! checked as with `verify-ca`, as libpq does. The mode comes from the URL, else
//! `PGSSLMODE`. A Unix socket never uses TLS (the server offers none there).
//!
//! The driver reads neither the verify modes nor `sslrootcert`, so [`take_settings`]
//! takes them out of the URL before the driver parses it; rustls does the rest, through
//! `tokio-postgres-rustls` (the driver's maintained rustls binding).

use std::path::PathBuf;
use std::sync::Arc;

use postgres::config::{Host, SslMode};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, ring};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use swarm_store::error::{Error, Result};
use swarm_util::environment::Environment;
use swarm_util::error::Base as _;
use swarm_util::vars;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

/// What the URL said about TLS, taken out of it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Given {
    pub sslmode: Option<String>,
    pub sslrootcert: Option<String>,
}

/// `url` without `sslmode` and `sslrootcert`, and what they said. Both URL forms:
/// `postgres://…?sslmode=verify-full&sslrootcert=/ca.pem` and `sslmode=verify-full host=…`.
pub fn take_settings(url: &str) -> (String, Given) {
    let mut given = Given::default();
    let mut keep = |pair: &str| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let slot = match key.trim() {
            "sslmode" => &mut given.sslmode,
            "sslrootcert" => &mut given.sslrootcert,
            _ => return true,
        };
        *slot = Some(value.trim().to_owned());
        false
    };
    let rest = if url.contains("://") {
        match url.split_once('?') {
            Some((base, query)) => {
                let kept: Vec<&str> = query.split('&').filter(|p| keep(p)).collect();
                if kept.is_empty() {
                    base.to_owned()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
            None => url.to_owned(),
        }
    } else {
        let kept: Vec<&str> = url.split_whitespace().filter(|p| keep(p)).collect();
        kept.join(" ")
    };
    (rest, given)
}

/// The TLS a connection uses: the driver's mode and the connector that checks what the
/// mode asks for.
pub struct Tls {
    pub ssl_mode: SslMode,
    pub connector: MakeRustlsConnect,
}

/// The TLS `given` (else `env`) asks for; an unknown mode, or a verify mode without a
/// readable root certificate, is a usage error saying what to give.
pub fn settle(given: &Given, env: &Environment) -> Result<Tls> {
    let mode = match given.sslmode.as_deref().or(env.get(vars::PGSSLMODE)) {
        None | Some("prefer") | Some("allow") => Mode::Prefer,
        Some("disable") => Mode::Disable,
        Some("require") => Mode::Require,
        Some("verify-ca") => Mode::VerifyCa,
        Some("verify-full") => Mode::VerifyFull,
        Some(other) => {
            return Err(Error::usage(format!(
                "failed to read sslmode '{other}': use disable, prefer, require, verify-ca or verify-full"
            )));
        }
    };
    let root = given
        .sslrootcert
        .as_deref()
        .or(env.get(vars::PGSSLROOTCERT))
        .map(PathBuf::from)
        .or_else(|| {
            env.get(vars::HOME)
                .map(|h| PathBuf::from(h).join(".postgresql/root.crt"))
        });
    let roots = match &root {
        Some(path) if path.exists() => Some(read_roots(path)?),
        _ => None,
    };
    let provider = Arc::new(ring::default_provider());
    let verifier: Arc<dyn ServerCertVerifier> = match (mode, roots) {
        (Mode::VerifyCa | Mode::VerifyFull, None) => {
            return Err(Error::usage(format!(
                "failed to check the database server's certificate: sslmode={} needs its root \
                 certificate; give sslrootcert=PATH, PGSSLROOTCERT or ~/.postgresql/root.crt",
                if mode == Mode::VerifyCa {
                    "verify-ca"
                } else {
                    "verify-full"
                }
            )));
        }
        (Mode::VerifyFull, Some(roots)) => web_pki(roots, &provider)?,
        (_, Some(roots)) => Arc::new(AnyName(web_pki(roots, &provider)?)),
        (_, None) => Arc::new(Unchecked(provider.clone())),
    };
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::usage(format!("failed to set up TLS: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok(Tls {
        ssl_mode: match mode {
            Mode::Disable => SslMode::Disable,
            Mode::Prefer => SslMode::Prefer,
            _ => SslMode::Require,
        },
        connector: MakeRustlsConnect::new(config),
    })
}

impl Tls {
    /// Sets the driver's mode on `config` and returns the connector to use: none over Unix
    /// sockets, which never carry TLS (libpq's rule; the driver would ask the connector for
    /// a socket path's name, which it cannot give).
    pub fn apply(self, config: &mut postgres::Config) -> Option<MakeRustlsConnect> {
        if config
            .get_hosts()
            .iter()
            .all(|h| matches!(h, Host::Unix(_)))
        {
            config.ssl_mode(SslMode::Disable);
            return None;
        }
        config.ssl_mode(self.ssl_mode);
        Some(self.connector)
    }
}

fn read_roots(path: &std::path::Path) -> Result<RootCertStore> {
    let bad = |why: String| {
        Error::usage(format!(
            "failed to read the database's root certificate {}: {why}",
            path.display()
        ))
    };
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(path).map_err(|e| bad(e.to_string()))? {
        roots
            .add(cert.map_err(|e| bad(e.to_string()))?)
            .map_err(|e| bad(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(bad("it holds no certificate".to_owned()));
    }
    Ok(roots)
}

fn web_pki(
    roots: RootCertStore,
    provider: &Arc<CryptoProvider>,
) -> Result<Arc<WebPkiServerVerifier>> {
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(|e| {
            Error::usage(format!(
                "failed to use the database's root certificate: {e}"
            ))
        })
}

/// `verify-ca`: the chain must hold, the name need not match (libpq's meaning).
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        use rustls::{CertificateError, Error as E};
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(E::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer` and `require` without a root certificate: encrypted, not authenticated (what
/// libpq does; `verify-full` is the mode that protects against an impostor).
#[derive(Debug)]
struct Unchecked(Arc<CryptoProvider>);

impl ServerCertVerifier for Unchecked {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tls_settings_are_taken_out_of_both_url_forms() {
        let (rest, given) = take_settings(
            "postgres://u@h:5/d?sslmode=verify-full&application_name=x&sslrootcert=/ca.pem",
        );
        assert_eq!(rest, "postgres://u@h:5/d?application_name=x");
        assert_eq!(given.sslmode.as_deref(), Some("verify-full"));
        assert_eq!(given.sslrootcert.as_deref(), Some("/ca.pem"));
        let (rest, given) = take_settings("postgres://u@h/d?sslmode=require");
        assert_eq!(
            (rest.as_str(), given.sslmode.as_deref()),
            ("postgres://u@h/d", Some("require"))
        );
        let (rest, given) = take_settings("host=h sslmode=verify-ca  user=u sslrootcert=/r.pem");
        assert_eq!(rest, "host=h user=u");
        assert_eq!(given.sslmode.as_deref(), Some("verify-ca"));
    }

    #[test]
    fn a_verify_mode_needs_a_root_certificate_and_a_bad_mode_says_the_good_ones() {
        let home = tempfile::tempdir().unwrap();
        let env = Environment::from_pairs([("HOME", home.path().to_str().unwrap())]);
        let given = |mode: &str| Given {
            sslmode: Some(mode.into()),
            sslrootcert: None,
        };
        let err = settle(&given("verify-full"), &env)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("sslrootcert=PATH"), "{err}");
        let err = settle(&given("verify-everything"), &env)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("verify-full"), "{err}");
        assert_eq!(
            settle(&given("require"), &env).unwrap().ssl_mode,
            SslMode::Require
        );
        let env = Environment::from_pairs([("PGSSLMODE", "disable")]);
        assert_eq!(
            settle(&Given::default(), &env).unwrap().ssl_mode,
            SslMode::Disable
        );
    }

    #[test]
    fn a_unix_socket_never_carries_tls() {
        use std::str::FromStr;
        let tls = || settle(&Given::default(), &Environment::default()).unwrap();
        let mut c = postgres::Config::from_str("host=/tmp port=1 user=x").unwrap();
        assert!(tls().apply(&mut c).is_none());
        assert_eq!(c.get_ssl_mode(), SslMode::Disable);
        let mut c = postgres::Config::from_str("host=localhost port=1 user=x").unwrap();
        assert!(tls().apply(&mut c).is_some());
        assert_eq!(c.get_ssl_mode(), SslMode::Prefer);
    }
}
