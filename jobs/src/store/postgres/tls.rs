//! How the PostgreSQL store reaches its database: libpq's TLS options (`sslmode`,
//! `sslrootcert`, `sslcert`, `sslkey`) read out of the URL, since tokio-postgres knows
//! only three of the modes and no certificate files, and a rustls connector that applies
//! them. A mode that verifies never falls back to clear text, and nothing is sent to a
//! server whose certificate that mode could not check.

use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::config::{Host, SslMode as WireMode};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};
use tokio_postgres::{Client, Config, Connection, Socket};

/// libpq's `sslmode`, with its meanings: see docs/STORE.md ("TLS").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    /// Clear text only.
    Disable,
    /// Clear text first; TLS (unverified) when the clear attempt fails.
    Allow,
    /// TLS (unverified) when the server offers it, else clear text. libpq's default.
    Prefer,
    /// TLS or nothing; the certificate is checked against a root CA file when there is
    /// one (libpq's rule, kept for compatibility), else not at all.
    Require,
    /// TLS, the server's certificate signed by a CA of `sslrootcert`.
    VerifyCa,
    /// As `verify-ca`, and the certificate names the host connected to.
    VerifyFull,
}

impl SslMode {
    fn parse(text: &str) -> Option<SslMode> {
        Some(match text {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// The options this module takes out of the URL before tokio-postgres reads the rest.
const TLS_OPTIONS: [&str; 4] = ["sslmode", "sslrootcert", "sslcert", "sslkey"];

/// A PostgreSQL URL read: what tokio-postgres connects with, and how TLS is done.
pub(super) struct Target {
    pub config: Config,
    pub tls: Tls,
}

/// Why a URL cannot be used, in one line for the user.
#[derive(Debug)]
pub(super) enum UrlError {
    /// tokio-postgres cannot read it.
    Syntax(String),
    /// Its TLS options cannot be applied (an unknown mode, a missing or unreadable file).
    Tls(String),
}

/// Reads a `postgresql://` URL with libpq's TLS options. `home` is where libpq's
/// default files live (`~/.postgresql/root.crt`, `postgresql.crt`, `postgresql.key`).
pub(super) fn read_url(url: &str, home: Option<&Path>) -> Result<Target, UrlError> {
    let (rest, options) = take_tls_options(url);
    let config = Config::from_str(&rest).map_err(|e| UrlError::Syntax(e.to_string()))?;
    tls_settings(config, &options, home).map_err(UrlError::Tls)
}

fn tls_settings(
    config: Config,
    options: &[(String, String)],
    home: Option<&Path>,
) -> Result<Target, String> {
    let option = |name: &str| {
        options
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    let mode = match option("sslmode") {
        None => SslMode::Prefer,
        Some(text) => SslMode::parse(text).ok_or_else(|| {
            format!(
                "sslmode '{text}' is not a mode: use disable, allow, prefer, require, \
                 verify-ca or verify-full"
            )
        })?,
    };
    let default_file = |name: &str| home.map(|home| home.join(".postgresql").join(name));
    // libpq ignores TLS on Unix sockets: the server never offers it there.
    let all_sockets = config.get_hostaddrs().is_empty()
        && !config.get_hosts().is_empty()
        && config
            .get_hosts()
            .iter()
            .all(|host| !matches!(host, Host::Tcp(_)));
    if mode == SslMode::Disable || all_sockets {
        return Ok(Target {
            config,
            tls: Tls {
                mode: SslMode::Disable,
                client: None,
                roots: None,
            },
        });
    }
    let roots = match option("sslrootcert") {
        Some(path) => Some(PathBuf::from(path)),
        None => default_file("root.crt").filter(|path| path.exists()),
    };
    let check = match (&roots, mode) {
        (None, SslMode::VerifyCa | SslMode::VerifyFull) => {
            let path = default_file("root.crt")
                .map(|path| path.display().to_string())
                .unwrap_or_else(|| "~/.postgresql/root.crt".into());
            return Err(format!(
                "sslmode={} needs the CA certificate that signed the server's: give its path \
                 as sslrootcert=/path/to/ca.crt (the default, {path}, does not exist), or \
                 use sslmode=require to connect without checking the server",
                mode.as_str()
            ));
        }
        (Some(roots), SslMode::VerifyFull) => Check::Full(roots.clone()),
        (Some(roots), SslMode::VerifyCa | SslMode::Require) => Check::Chain(roots.clone()),
        _ => Check::Nothing,
    };
    let identity = match (option("sslcert"), option("sslkey")) {
        (None, None) => match (
            default_file("postgresql.crt"),
            default_file("postgresql.key"),
        ) {
            (Some(cert), Some(key)) if cert.exists() && key.exists() => Some((cert, key)),
            _ => None,
        },
        (Some(cert), Some(key)) => Some((PathBuf::from(cert), PathBuf::from(key))),
        (Some(cert), None) => match default_file("postgresql.key") {
            Some(key) if key.exists() => Some((PathBuf::from(cert), key)),
            _ => {
                return Err(format!(
                    "sslcert={cert} needs its private key: give sslkey=/path/to/client.key"
                ))
            }
        },
        (None, Some(key)) => {
            return Err(format!(
                "sslkey={key} needs its certificate: give sslcert=/path/to/client.crt"
            ))
        }
    };
    let client = client_config(&check, identity.as_ref().map(|(c, k)| (c.as_path(), k)))?;
    Ok(Target {
        config,
        tls: Tls {
            mode,
            client: Some(Arc::new(client)),
            roots,
        },
    })
}

/// Splits the TLS options out of the URL's query (the last of a repeated one wins, as
/// in libpq); the rest is left as written for tokio-postgres, but for a `host` list:
/// libpq reads `?host=/a,/b` (or `host=h1,h2`) as several servers to try in turn, and
/// tokio-postgres only so when each is a `host` of its own, so the list is split into
/// one `host=` per server.
fn take_tls_options(url: &str) -> (String, Vec<(String, String)>) {
    // The query starts at the first '?' after the credentials, where tokio-postgres
    // looks for it.
    let start = url.find("://").map_or(0, |scheme| scheme + 3);
    let after = url[start..].find('@').map_or(start, |at| start + at + 1);
    let Some(question) = url[after..].find('?').map(|q| after + q) else {
        return (url.to_string(), Vec::new());
    };
    let decode = |text: &str| {
        percent_encoding::percent_decode_str(text)
            .decode_utf8_lossy()
            .into_owned()
    };
    let mut kept = Vec::new();
    let mut taken = Vec::new();
    for pair in url[question + 1..].split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(key);
        if TLS_OPTIONS.contains(&key.as_str()) {
            taken.push((key, decode(value)));
        } else if key == "host" {
            kept.extend(value.split(',').map(|host| format!("host={host}")));
        } else {
            kept.push(pair.to_string());
        }
    }
    let mut rest = url[..question].to_string();
    if !kept.is_empty() {
        rest.push('?');
        rest.push_str(&kept.join("&"));
    }
    (rest, taken)
}

/// What the server's certificate is checked for.
enum Check {
    Nothing,
    /// Signed by a CA of this file; any name.
    Chain(PathBuf),
    /// Signed by a CA of this file, and naming the host.
    Full(PathBuf),
}

fn client_config(
    check: &Check,
    identity: Option<(&Path, &PathBuf)>,
) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("cannot set up TLS: {e}"))?;
    let verifier: Arc<dyn ServerCertVerifier> = match check {
        Check::Nothing => Arc::new(Unverified(Arc::clone(&provider))),
        Check::Chain(path) | Check::Full(path) => {
            let webpki = WebPkiServerVerifier::builder_with_provider(
                Arc::new(root_store(path)?),
                Arc::clone(&provider),
            )
            .build()
            .map_err(|e| format!("cannot use sslrootcert {}: {e}", path.display()))?;
            match check {
                Check::Full(_) => webpki,
                _ => Arc::new(AnyName(webpki)),
            }
        }
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| {
                    format!(
                        "cannot read sslcert {}: {e}; give the client certificate in PEM",
                        cert.display()
                    )
                })?;
            private_key_is_private(key)?;
            let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| {
                format!(
                    "cannot read sslkey {}: {e}; give the client's private key in PEM, \
                     unencrypted",
                    key.display()
                )
            })?;
            builder.with_client_auth_cert(chain, key_der).map_err(|e| {
                format!(
                    "cannot use sslcert {} with sslkey {}: {e}",
                    cert.display(),
                    key.display()
                )
            })?
        }
    };
    // What libpq 17 sends; earlier servers ignore it, a server taking direct TLS needs it.
    config.alpn_protocols = vec![b"postgresql".to_vec()];
    Ok(config)
}

fn root_store(path: &Path) -> Result<rustls::RootCertStore, String> {
    let unreadable = |e: &dyn fmt::Display| {
        format!(
            "cannot read sslrootcert {}: {e}; give the CA certificate (PEM) that signed the \
             server's certificate",
            path.display()
        )
    };
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| unreadable(&e))?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(unreadable(&"it holds no certificate"));
    }
    Ok(roots)
}

/// libpq's rule: a client key others can read is refused (0600, or 0640 owned by root).
fn private_key_is_private(key: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta =
        std::fs::metadata(key).map_err(|e| format!("cannot read sslkey {}: {e}", key.display()))?;
    let mode = meta.mode() & 0o777;
    let private = mode & 0o077 == 0 || (meta.uid() == 0 && mode & 0o037 == 0);
    if private {
        Ok(())
    } else {
        Err(format!(
            "sslkey {} can be read by others (mode {mode:04o}); make it private: chmod 600 {}",
            key.display(),
            key.display()
        ))
    }
}

/// `prefer`, `allow` and `require` without a root file: encryption, no identity check
/// (libpq's meaning). The handshake's own signatures are still checked.
#[derive(Debug)]
struct Unverified(Arc<CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `verify-ca`: the whole WebPKI check but the name. webpki checks the chain before the
/// name, so a name mismatch means the chain was good.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
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
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// How the store's connections are made: the mode, and the rustls settings for it
/// (`None` when no connection of this URL can use TLS).
#[derive(Clone)]
pub(super) struct Tls {
    pub mode: SslMode,
    client: Option<Arc<rustls::ClientConfig>>,
    /// The root CA file the server's certificate is checked against, for messages.
    roots: Option<PathBuf>,
}

/// A connection of the store, over TLS or not.
pub(super) type PgConnection = Connection<Socket, TlsStream>;

impl Tls {
    /// Connects one client with libpq's fallbacks: `allow` tries TLS after a failed
    /// clear attempt, `prefer` clear text after a failed handshake; the other modes
    /// have one attempt.
    pub async fn connect(
        &self,
        config: &Config,
    ) -> Result<(Client, PgConnection), tokio_postgres::Error> {
        let mut config = config.clone();
        let connector = self.connector();
        match self.mode {
            SslMode::Disable => config.ssl_mode(WireMode::Disable).connect(connector).await,
            SslMode::Allow => match config.ssl_mode(WireMode::Disable).connect(connector).await {
                Ok(connected) => Ok(connected),
                Err(_) => {
                    config
                        .ssl_mode(WireMode::Require)
                        .connect(self.connector())
                        .await
                }
            },
            SslMode::Prefer => {
                let failed = Arc::clone(&connector.handshake_failed);
                match config.ssl_mode(WireMode::Prefer).connect(connector).await {
                    Err(_) if failed.load(Ordering::Relaxed) => {
                        config
                            .ssl_mode(WireMode::Disable)
                            .connect(self.connector())
                            .await
                    }
                    other => other,
                }
            }
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                config.ssl_mode(WireMode::Require).connect(connector).await
            }
        }
    }

    fn connector(&self) -> Connector {
        Connector {
            tls: self.clone(),
            handshake_failed: Arc::new(AtomicBool::new(false)),
        }
    }

    /// The one-line account of a connection the TLS handshake or the server itself
    /// refused (naming the mode for TLS); `None` for anything else (a network error).
    pub fn explain(&self, error: &(dyn std::error::Error + 'static)) -> Option<String> {
        let mut cause = Some(error);
        while let Some(e) = cause {
            if let Some(failure) = e.downcast_ref::<TlsFailure>() {
                return Some(failure.to_string());
            }
            // tokio-postgres shows a server's refusal as "db error" only.
            if let Some(db) = e.downcast_ref::<tokio_postgres::error::DbError>() {
                return Some(format!(
                    "the server refused the connection (sslmode={}): {}",
                    self.mode.as_str(),
                    db.message()
                ));
            }
            // tokio-postgres' own words when the server answers the TLS request "no".
            if e.to_string() == "server does not support TLS" {
                return Some(format!(
                    "TLS with sslmode={} failed: the server does not accept TLS connections; \
                     turn on ssl in its postgresql.conf, or use sslmode=prefer",
                    self.mode.as_str()
                ));
            }
            cause = e.source();
        }
        None
    }
}

/// Makes one handshake per connection attempt; remembers whether one failed (for
/// `prefer`'s fallback).
#[derive(Clone)]
struct Connector {
    tls: Tls,
    handshake_failed: Arc<AtomicBool>,
}

impl MakeTlsConnect<Socket> for Connector {
    type Stream = TlsStream;
    type TlsConnect = Handshake;
    type Error = TlsFailure;

    fn make_tls_connect(&mut self, host: &str) -> Result<Handshake, TlsFailure> {
        let failure = |detail: String| TlsFailure {
            mode: self.tls.mode,
            detail,
        };
        let server = match ServerName::try_from(host.to_string()) {
            Ok(server) => server,
            // Only a name that is checked must be one; otherwise no SNI is sent.
            Err(_) if self.tls.mode != SslMode::VerifyFull => {
                ServerName::IpAddress(std::net::Ipv4Addr::UNSPECIFIED.into())
            }
            Err(e) => {
                return Err(failure(format!(
                    "the host '{host}' cannot be checked against a certificate: {e}"
                )))
            }
        };
        Ok(Handshake {
            config: self.tls.client.clone(),
            server,
            host: host.to_string(),
            tls: self.tls.clone(),
            failed: Arc::clone(&self.handshake_failed),
        })
    }
}

/// One TLS handshake over a connected socket.
struct Handshake {
    /// `None` where no connection uses TLS (`disable`, Unix sockets): tokio-postgres
    /// makes a handshake for every connection, and uses it only when TLS is wanted.
    config: Option<Arc<rustls::ClientConfig>>,
    server: ServerName<'static>,
    host: String,
    tls: Tls,
    failed: Arc<AtomicBool>,
}

impl TlsConnect<Socket> for Handshake {
    type Stream = TlsStream;
    type Error = TlsFailure;
    type Future = Pin<Box<dyn Future<Output = Result<TlsStream, TlsFailure>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        Box::pin(async move {
            let Some(config) = self.config else {
                return Err(TlsFailure {
                    mode: self.tls.mode,
                    detail: "TLS is not used on a Unix socket".into(),
                });
            };
            let connector = tokio_rustls::TlsConnector::from(config);
            match connector.connect(self.server, stream).await {
                Ok(stream) => Ok(TlsStream(stream)),
                Err(e) => {
                    self.failed.store(true, Ordering::Relaxed);
                    Err(TlsFailure {
                        mode: self.tls.mode,
                        detail: handshake_detail(&e, &self.host, self.tls.roots.as_deref()),
                    })
                }
            }
        })
    }
}

/// What went wrong in a handshake, in the user's terms, with what to do.
fn handshake_detail(error: &std::io::Error, host: &str, roots: Option<&Path>) -> String {
    let roots = roots.map_or_else(|| "sslrootcert".into(), |p| p.display().to_string());
    let tls = error
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match tls {
        Some(rustls::Error::InvalidCertificate(cert)) => match cert {
            CertificateError::UnknownIssuer | CertificateError::BadSignature => format!(
                "the server's certificate is not signed by a CA in {roots}; give sslrootcert \
                 the CA certificate that signed it"
            ),
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
                format!(
                    "the server's certificate is not valid for the host '{host}'; connect by a \
                     name its subjectAltName lists, or use sslmode=verify-ca"
                )
            }
            CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                "the server's certificate has expired; renew it on the server".into()
            }
            CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                "the server's certificate is not valid yet; check both hosts' clocks".into()
            }
            other => format!("the server's certificate was refused: {other:?}"),
        },
        Some(other) => format!("the TLS handshake failed: {other}"),
        None => format!("the TLS handshake failed: {error}"),
    }
}

/// A handshake or verification that failed, naming the mode.
#[derive(Debug)]
pub(super) struct TlsFailure {
    mode: SslMode,
    detail: String,
}

impl fmt::Display for TlsFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "TLS with sslmode={} failed: {}",
            self.mode.as_str(),
            self.detail
        )
    }
}

impl std::error::Error for TlsFailure {}

/// A TLS session over a store connection (tokio-postgres needs its own trait on it).
pub(super) struct TlsStream(tokio_rustls::client::TlsStream<Socket>);

impl AsyncRead for TlsStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}

impl tokio_postgres::tls::TlsStream for TlsStream {
    /// No channel binding: SCRAM authenticates without it (`channel_binding=prefer`).
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

/// The store's pool makes its connections here, so that every pooled connection gets
/// the same mode and fallbacks as the first, and each new one is checked for a failover
/// (the timeline it writes on) before it is used.
pub(super) struct PoolConnect {
    pub tls: Tls,
    pub watch: std::sync::Arc<super::failover::TimelineWatch>,
}

impl deadpool_postgres::Connect for PoolConnect {
    fn connect(
        &self,
        config: &Config,
    ) -> Pin<
        Box<
            dyn Future<
                    Output = Result<(Client, tokio::task::JoinHandle<()>), tokio_postgres::Error>,
                > + Send
                + '_,
        >,
    > {
        let config = config.clone();
        Box::pin(async move {
            let (client, connection) = self.tls.connect(&config).await?;
            let task = tokio::spawn(async move {
                // A broken connection is seen by the next query on its client.
                let _ = connection.await;
            });
            self.watch.check(&client).await;
            Ok((client, task))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_options_leave_the_query_and_the_rest_stays_as_written() {
        let (rest, taken) = take_tls_options(
            "postgresql://u:p%3F@h:5/db?application_name=x&sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.crt&connect_timeout=3",
        );
        assert_eq!(
            rest,
            "postgresql://u:p%3F@h:5/db?application_name=x&connect_timeout=3"
        );
        assert_eq!(
            taken,
            vec![
                ("sslmode".into(), "verify-full".into()),
                ("sslrootcert".into(), "/tmp/ca.crt".into())
            ]
        );
        let (rest, taken) = take_tls_options("postgresql://h/db?sslmode=require");
        assert_eq!((rest.as_str(), taken.len()), ("postgresql://h/db", 1));
        let (rest, taken) = take_tls_options("postgresql://user@h/db");
        assert_eq!((rest.as_str(), taken.len()), ("postgresql://user@h/db", 0));
    }

    #[test]
    fn a_host_list_names_each_server_in_turn_as_libpq_reads_it() {
        use tokio_postgres::config::TargetSessionAttrs;
        let sockets = read_url(
            "postgresql://u@/db?host=/run/a,/run/b&port=5432&target_session_attrs=read-write",
            None,
        )
        .unwrap();
        let hosts = sockets.config.get_hosts();
        assert_eq!(hosts.len(), 2, "{hosts:?}");
        assert!(matches!(&hosts[1], Host::Unix(path) if path == Path::new("/run/b")));
        assert_eq!(
            sockets.config.get_target_session_attrs(),
            TargetSessionAttrs::ReadWrite
        );
        let tcp = read_url("postgresql://u@one:5432,two:5433/db", None).unwrap();
        assert_eq!(tcp.config.get_hosts().len(), 2);
        assert_eq!(tcp.config.get_ports(), [5432, 5433]);
    }

    #[test]
    fn the_default_is_prefer_and_sockets_never_use_tls() {
        let target = read_url("postgresql://u@db.example/x", None).unwrap();
        assert_eq!(target.tls.mode, SslMode::Prefer);
        let target = read_url(
            "postgresql://u@/x?host=/run/postgresql&sslmode=require",
            None,
        )
        .unwrap();
        assert_eq!(target.tls.mode, SslMode::Disable);
    }

    #[test]
    fn a_verifying_mode_without_a_root_file_and_an_unknown_mode_are_refused() {
        let home = tempfile::tempdir().unwrap();
        let message = |url: &str| match read_url(url, Some(home.path())) {
            Err(UrlError::Tls(e)) => e,
            _ => panic!("{url} is not refused for TLS"),
        };
        let e = message("postgresql://u@db/x?sslmode=verify-full");
        assert!(
            e.contains("sslmode=verify-full needs the CA certificate"),
            "{e}"
        );
        let e = message("postgresql://u@db/x?sslmode=verify");
        assert!(e.starts_with("sslmode 'verify' is not a mode"), "{e}");
    }
}
