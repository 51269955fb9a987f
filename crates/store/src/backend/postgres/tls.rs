//! TLS to a PostgreSQL server, with libpq's `sslmode` meanings, through rustls (ring
//! provider) and `tokio-postgres-rustls`.
//!
//! The mode comes from the URL (`?sslmode=`), else the service, else `PGSSLMODE`, else libpq's
//! default `prefer`; the root certificates from `sslrootcert` / `PGSSLROOTCERT`, else
//! `~/.postgresql/root.crt` when it exists, else (for the verifying modes only) the system's.
//!
//! | mode | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | – |
//! | `prefer` (default) | when the server offers it | as `require` |
//! | `require` | always | not checked, unless a root certificate file is there: then as `verify-ca` (libpq's rule) |
//! | `verify-ca` | always | signed by a root certificate |
//! | `verify-full` | always | signed by a root certificate and issued for the host named |
//!
//! `allow` (plain text first) is refused: say `prefer` or `disable`. PostgreSQL offers no TLS
//! on a Unix socket: a socket folder in the host list is reached in plain text under `disable`
//! or `prefer`, and refused under the other modes (where libpq would quietly connect without
//! TLS). Each host of a list gets its own connector: sockets plain, TCP hosts by the mode.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use postgres::config::{Host, SslMode as PgSslMode};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::verify_server_cert_signed_by_trust_anchor;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use super::error::ConfigError;

/// libpq's `sslmode`, less `allow`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub(crate) fn parse(text: &str) -> Result<SslMode, ConfigError> {
        Ok(match text {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            "allow" => {
                return Err(ConfigError::Unsupported {
                    keyword: "sslmode",
                    value: "allow".into(),
                    why: "plain text first, TLS only if the server insists: say prefer or disable",
                });
            }
            other => {
                return Err(ConfigError::Invalid {
                    keyword: "sslmode",
                    value: other.into(),
                    expected: "one of disable, allow, prefer, require, verify-ca, verify-full"
                        .into(),
                });
            }
        })
    }
}

/// Where the certificates that sign the server's come from (`sslrootcert`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RootCerts {
    /// Not named: `~/.postgresql/root.crt` when it exists (else, for the verifying modes,
    /// the system's).
    Default,
    /// A PEM file (`sslrootcert=FILE`, `PGSSLROOTCERT`).
    File(PathBuf),
    /// `sslrootcert=system`: the system's roots (and `verify-full`), as in libpq 16.
    System,
}

/// The TLS versions allowed (`ssl_min_protocol_version`, `ssl_max_protocol_version`; rustls
/// speaks 1.2 and 1.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TlsVersions {
    pub(crate) tls12: bool,
    pub(crate) tls13: bool,
}

impl SslMode {
    /// The mode as libpq spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// The TLS settings of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TlsSettings {
    pub(crate) mode: SslMode,
    pub(crate) root_cert: RootCerts,
    pub(crate) versions: TlsVersions,
}

/// How to connect: in plain text, or through rustls.
#[derive(Clone)]
pub(crate) enum Connector {
    Plain,
    Tls(tokio_postgres_rustls::MakeRustlsConnect),
}

/// What certificate check a mode and the files at hand call for: the chain and the name, the
/// chain alone, or (`Chain(None)`) nothing.
enum Check {
    Full(RootCertStore),
    Chain(Option<RootCertStore>),
}

impl TlsSettings {
    /// The client's `sslmode` (`verify-*` are `require` to it: the connector checks) and the
    /// connector for one host.
    pub(crate) fn connector(&self, host: &Host) -> Result<(PgSslMode, Connector), ConfigError> {
        if self.mode == SslMode::Disable {
            return Ok((PgSslMode::Disable, Connector::Plain));
        }
        if matches!(host, Host::Unix(_)) {
            return match self.mode {
                SslMode::Prefer => Ok((PgSslMode::Disable, Connector::Plain)),
                mode => Err(ConfigError::Invalid {
                    keyword: "sslmode",
                    value: mode.name().into(),
                    expected: "PostgreSQL offers no TLS on a Unix socket (psql connects there in plain text whatever sslmode says; scalelab does not): connect to a TCP host for sslmode=require/verify-*, or say sslmode=disable or prefer".into(),
                }),
            };
        }
        let check = self.check()?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut versions = Vec::new();
        if self.versions.tls13 {
            versions.push(&rustls::version::TLS13);
        }
        if self.versions.tls12 {
            versions.push(&rustls::version::TLS12);
        }
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| ConfigError::Url(format!("TLS: {e}")))?;
        let config = match check {
            Check::Full(roots) => builder.with_root_certificates(roots),
            Check::Chain(roots) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(ChainOnly {
                    roots: roots.map(Arc::new),
                    algorithms: provider.signature_verification_algorithms,
                })),
        }
        .with_no_client_auth();
        let mode = match self.mode {
            SslMode::Prefer => PgSslMode::Prefer,
            _ => PgSslMode::Require,
        };
        Ok((
            mode,
            Connector::Tls(tokio_postgres_rustls::MakeRustlsConnect::new(config)),
        ))
    }

    fn check(&self) -> Result<Check, ConfigError> {
        let file = match &self.root_cert {
            RootCerts::System => return Ok(Check::Full(system_roots()?)),
            RootCerts::File(f) => Some(f.clone()),
            RootCerts::Default => std::env::var_os("HOME")
                .map(|h| Path::new(&h).join(".postgresql/root.crt"))
                .filter(|p| p.is_file()),
        };
        let roots = match &file {
            Some(f) => Some(roots_from(f)?),
            None => None,
        };
        Ok(match (self.mode, roots) {
            (SslMode::VerifyFull, Some(r)) => Check::Full(r),
            (SslMode::VerifyCa | SslMode::Require | SslMode::Prefer, Some(r)) => {
                Check::Chain(Some(r))
            }
            (SslMode::VerifyFull, None) => Check::Full(system_roots()?),
            (SslMode::VerifyCa, None) => Check::Chain(Some(system_roots()?)),
            (SslMode::Require | SslMode::Prefer | SslMode::Disable, None)
            | (SslMode::Disable, Some(_)) => Check::Chain(None),
        })
    }
}

fn roots_from(file: &Path) -> Result<RootCertStore, ConfigError> {
    let bad = |e: String| {
        ConfigError::Url(format!(
            "sslrootcert {}: {e} (a PEM file of the certificates that sign the server's)",
            file.display()
        ))
    };
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(file).map_err(|e| bad(e.to_string()))? {
        roots
            .add(cert.map_err(|e| bad(e.to_string()))?)
            .map_err(|e| bad(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(bad("no certificate in it".into()));
    }
    Ok(roots)
}

fn system_roots() -> Result<RootCertStore, ConfigError> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(found.certs);
    if roots.is_empty() {
        return Err(ConfigError::Url(
            "sslmode=verify-*: no root certificate: give sslrootcert=FILE (or ~/.postgresql/root.crt), or install the system's (Debian: ca-certificates)".into(),
        ));
    }
    Ok(roots)
}

/// `verify-ca` (with `roots`: the chain must end at one of them; the name is not checked) and
/// `require` without a root certificate file (`None`: encrypted, the server not authenticated,
/// libpq's rule); the handshake's signatures are checked against the certificate either way.
#[derive(Debug)]
struct ChainOnly {
    roots: Option<Arc<RootCertStore>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = ParsedCertificate::try_from(end_entity)?;
            verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
