//! Email sender over SMTP with the variables Python Hermes reads: from `EMAIL_ADDRESS`,
//! logged in with `EMAIL_PASSWORD`, through `EMAIL_SMTP_HOST`:`EMAIL_SMTP_PORT` (587 by
//! default; STARTTLS, or implicit TLS on 465 or with `EMAIL_SMTP_TLS=implicit`). It owns
//! the MIME layout (text and HTML alternatives, `MEDIA:` files attached) and how each
//! SMTP failure is judged. It never sends a password or a message over an unencrypted
//! connection, and never resends a message whose data went out without an answer.

use std::path::Path;
use std::time::{Duration, SystemTime};

use lettre::address::Envelope;
use lettre::message::header::ContentType;
use lettre::message::{Attachment, Mailbox, MultiPart, SinglePart};
use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, Certificate, CertificateStore};
use lettre::transport::smtp::client::{TlsParameters, TlsParametersBuilder};
use lettre::transport::smtp::commands::{Data, Mail, Rcpt};
use lettre::transport::smtp::extension::ClientId;
use lettre::transport::smtp::Error as SmtpError;
use lettre::Address;

use jobs::target::Platform;

use super::format::{split, Part};
use super::http::{report, Failure, Flight, Link, Verdict};
use super::sender::{
    as_parts, opened, read_media, settings, Attachments, Description, Home, Open, Opened, Sender,
    Sending,
};
use foundation::environment::Environment;

/// Hermes' limit on one email body; a longer reply becomes several emails.
pub const MAX_CHARS: usize = 50_000;

pub const DESCRIPTION: Description = Description::new(Platform::Email, open)
    .needs(&["EMAIL_ADDRESS", "EMAIL_PASSWORD", "EMAIL_SMTP_HOST"])
    .home(Home::var("EMAIL_HOME_ADDRESS"))
    .cut(|text, media| as_parts(parts(text, media.len())))
    .attachments(Attachments::OnParts);

/// The subject Python Hermes gives every email it sends on its own (outside a thread).
pub const SUBJECT: &str = "Hermes Agent";

/// Connecting, TLS and login: Python Hermes' SMTP timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// From the first byte of the message data to the server's answer (attachments).
const DATA_TIMEOUT: Duration = Duration::from_secs(120);

/// How the connection is encrypted: never not at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tls {
    /// Plain TCP upgraded with STARTTLS before the login (submission, port 587).
    StartTls,
    /// TLS from the first byte (SMTPS, port 465).
    Implicit,
}

/// The account and server of the `EMAIL_*` variables.
struct Smtp {
    from: Mailbox,
    login: String,
    password: String,
    host: String,
    port: u16,
    tls: Tls,
    /// Certificates trusted beyond the Mozilla roots: the system's and `SSL_CERT_FILE`'s.
    extra_roots: Vec<Certificate>,
}

impl Smtp {
    /// Reads the settings; anything missing or malformed is a final failure saying what
    /// to set.
    fn from_env(env: &Environment) -> Result<Smtp, Failure> {
        let vars = settings(env, &DESCRIPTION)?;
        let (address, password, host) = (vars[0], vars[1], vars[2]);
        let from: Address = address.parse().map_err(|_| {
            Failure::Final(format!(
                "EMAIL_ADDRESS '{address}' is not an email address (fix it in {})",
                env.dotenv_hint()
            ))
        })?;
        let port = match env.get("EMAIL_SMTP_PORT") {
            None => 587,
            Some(text) => text.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| {
                Failure::Final(format!(
                    "EMAIL_SMTP_PORT '{text}' is not a port number (587 for STARTTLS, 465 for implicit TLS)"
                ))
            })?,
        };
        let tls = match env.get("EMAIL_SMTP_TLS").map(str::to_ascii_lowercase) {
            None if port == 465 => Tls::Implicit,
            None => Tls::StartTls,
            Some(mode) if mode == "starttls" => Tls::StartTls,
            Some(mode) if mode == "implicit" => Tls::Implicit,
            Some(mode) => {
                return Err(Failure::Final(format!(
                    "EMAIL_SMTP_TLS '{mode}' is neither 'starttls' nor 'implicit'"
                )))
            }
        };
        Ok(Smtp {
            from: Mailbox::new(None, from),
            login: address.to_string(),
            password: password.to_string(),
            host: host.to_string(),
            port,
            tls,
            extra_roots: extra_roots(env.get("SSL_CERT_FILE"))?,
        })
    }

    fn tls_parameters(&self) -> Result<TlsParameters, Failure> {
        let mut builder = TlsParametersBuilder::new(self.host.clone())
            .certificate_store(CertificateStore::WebpkiRoots);
        for certificate in &self.extra_roots {
            builder = builder.add_root_certificate(certificate.clone());
        }
        builder
            .build_rustls()
            .map_err(|e| Failure::Final(format!("cannot set up TLS: {}", chain(&e))))
    }

    fn server(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

/// The system's trusted certificates (or, as OpenSSL does, those of `SSL_CERT_FILE` /
/// `SSL_CERT_DIR` in the process environment) plus those of `SSL_CERT_FILE` as Hermes'
/// environment sets it (`.env` too): how a private CA or a self-signed server is
/// trusted. A named file that cannot be read is a final failure.
fn extra_roots(cert_file: Option<&str>) -> Result<Vec<Certificate>, Failure> {
    let mut ders: Vec<Vec<u8>> = rustls_native_certs::load_native_certs()
        .certs
        .into_iter()
        .map(|der| der.as_ref().to_vec())
        .collect();
    if let Some(path) = cert_file {
        let pem = std::fs::read(path)
            .map_err(|e| Failure::Final(format!("SSL_CERT_FILE {path} cannot be read: {e}")))?;
        let from_file = pem_blocks(&pem);
        if from_file.is_empty() {
            return Err(Failure::Final(format!(
                "SSL_CERT_FILE {path} holds no PEM certificate"
            )));
        }
        ders.extend(from_file);
    }
    // A certificate rustls cannot read (old system bundles hold a few) is skipped.
    Ok(ders
        .into_iter()
        .filter_map(|der| Certificate::from_der(der).ok())
        .collect())
}

/// The DER bytes of each `CERTIFICATE` block of a PEM file.
fn pem_blocks(pem: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine;
    let text = String::from_utf8_lossy(pem);
    let mut out = Vec::new();
    let mut body: Option<String> = None;
    for line in text.lines().map(str::trim) {
        match (&mut body, line) {
            (None, "-----BEGIN CERTIFICATE-----") => body = Some(String::new()),
            (Some(b64), "-----END CERTIFICATE-----") => {
                if let Ok(der) = base64::engine::general_purpose::STANDARD.decode(&*b64) {
                    out.push(der);
                }
                body = None;
            }
            (Some(b64), line) => b64.push_str(line),
            (None, _) => {}
        }
    }
    out
}

/// The emails a reply becomes: its parts of [`MAX_CHARS`] (marked `(i/n)` when more
/// than one), with every `MEDIA:` file attached to the last; an empty text with files
/// is one email of files alone.
pub fn parts(text: &str, media: usize) -> Vec<String> {
    if text.trim().is_empty() {
        return match media {
            0 => Vec::new(),
            _ => vec![String::new()],
        };
    }
    split(text, MAX_CHARS, &|s| s.chars().count())
}

/// Opens one address. Email has no threads.
fn open(open: Open<'_>) -> Opened<'_> {
    let last = parts(open.text, open.media.len()).len().saturating_sub(1);
    Box::pin(async move {
        let smtp = Smtp::from_env(open.env)?;
        let to: Address = open.chat.trim().parse().map_err(|_| {
            let chat = open.chat;
            Failure::Final(format!(
                "'{chat}' is not an email address (use email:user@example.com)"
            ))
        })?;
        let recipient = Recipient {
            smtp,
            to,
            media: open.media,
            last,
            link: open.link,
        };
        opened(recipient)
    })
}

/// One address, reached through the account's SMTP server.
struct Recipient<'a> {
    smtp: Smtp,
    to: Address,
    /// Attached to the last email.
    media: &'a [String],
    last: usize,
    link: Link<'a>,
}

impl Sender for Recipient<'_> {
    fn text<'a>(&'a mut self, item: usize, part: &'a Part) -> Sending<'a> {
        Box::pin(async move {
            let files = match item == self.last {
                true => self.media,
                false => &[],
            };
            let message = compose(&self.smtp, &self.to, &part.rendered, files)?;
            let envelope = Envelope::new(Some(self.smtp.from.email.clone()), vec![self.to.clone()])
                .map_err(|e| Failure::Final(format!("bad envelope: {e}")))?;
            self.deliver(&envelope, &message).await
        })
    }
}

/// One email as Hermes sends it: From the account, To the address, Subject
/// [`SUBJECT`], Date now, a `<hermes-…@domain>` Message-ID; the text as text/plain and
/// its Markdown rendered as text/html (multipart/alternative), inside a
/// multipart/mixed with the files when there are any.
fn compose(smtp: &Smtp, to: &Address, text: &str, files: &[String]) -> Result<Vec<u8>, Failure> {
    let alternative = MultiPart::alternative_plain_html(text.to_string(), html_of(text));
    let body = match files.is_empty() {
        true => alternative,
        false => {
            let mut mixed = MultiPart::mixed().multipart(alternative);
            for path in files {
                mixed = mixed.singlepart(attachment(Path::new(path))?);
            }
            mixed
        }
    };
    let domain = smtp.from.email.domain();
    let id = format!("<hermes-{:012x}@{domain}>", rand::random::<u64>() >> 16);
    lettre::Message::builder()
        .from(smtp.from.clone())
        .to(Mailbox::new(None, to.clone()))
        .subject(SUBJECT)
        .date(SystemTime::now())
        .message_id(Some(id))
        .multipart(body)
        .map(|message| message.formatted())
        .map_err(|e| Failure::Final(format!("cannot build the email: {e}")))
}

/// A `MEDIA:` file as an attachment, its type guessed from its extension.
fn attachment(path: &Path) -> Result<SinglePart, Failure> {
    let (name, bytes) = read_media(path)?;
    let guessed = mime_guess::from_path(path).first_or_octet_stream();
    let content_type = ContentType::parse(guessed.essence_str())
        .unwrap_or_else(|_| ContentType::parse("application/octet-stream").expect("a valid type"));
    Ok(Attachment::new(name).body(bytes, content_type))
}

/// The HTML alternative: the text's Markdown ([`super::format::markdown_html`]: raw
/// HTML in it shown as text) as a whole document.
pub fn html_of(text: &str) -> String {
    let body = super::format::markdown_html(text);
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head><body>\n{body}</body></html>\n"
    )
}

impl Recipient<'_> {
    /// Delivers one email within the run's retry budget: a failure before its data went
    /// out (a refused connection, a 4xx) is tried again after a backoff, a 5xx is final,
    /// and once the data is out an unanswered send is never repeated.
    async fn deliver(&self, envelope: &Envelope, message: &[u8]) -> Result<(), Failure> {
        let mut retrier = self.link.retrier();
        loop {
            let sent = attempt(&self.smtp, envelope, message).await;
            let judged = sent.map(|()| ((), Verdict::Done, String::new()));
            if retrier.judged(&self.link, judged).await?.is_some() {
                return Ok(());
            }
        }
    }
}

/// One connection: connect, encrypt, log in, hand over the message, quit.
async fn attempt(smtp: &Smtp, envelope: &Envelope, message: &[u8]) -> Result<(), Failure> {
    let opening = tokio::time::timeout(CONNECT_TIMEOUT, connect(smtp, envelope)).await;
    let mut connection = opening.map_err(|_| {
        Failure::Transient(format!(
            "the SMTP server {} did not answer within {} s",
            smtp.server(),
            CONNECT_TIMEOUT.as_secs()
        ))
    })??;
    report(Flight::Out).await;
    let sending = tokio::time::timeout(DATA_TIMEOUT, connection.message(message)).await;
    let outcome = match sending {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => Err(after_data(&e)),
        Err(_) => Err(Failure::Unknown(format!(
            "no answer within {} s after the message was sent; not resent, to never send it twice",
            DATA_TIMEOUT.as_secs()
        ))),
    };
    match &outcome {
        Ok(()) => report(Flight::Back { delivered: true }).await,
        Err(Failure::Unknown(_)) => {}
        Err(_) => report(Flight::Back { delivered: false }).await,
    }
    if outcome.is_ok() {
        // The message is the server's now; a failed goodbye changes nothing.
        let _ = tokio::time::timeout(Duration::from_secs(5), connection.quit()).await;
    }
    outcome
}

/// Everything before the message data: connect (TLS from the start, or STARTTLS),
/// log in, then `MAIL FROM`, `RCPT TO`, `DATA`. Nothing here can deliver the message.
async fn connect(smtp: &Smtp, envelope: &Envelope) -> Result<AsyncSmtpConnection, Failure> {
    let hello = ClientId::Domain(foundation::host::host_name());
    let implicit = match smtp.tls {
        Tls::Implicit => Some(smtp.tls_parameters()?),
        Tls::StartTls => None,
    };
    let target = (smtp.host.as_str(), smtp.port);
    let mut connection =
        AsyncSmtpConnection::connect_tokio1(target, Some(CONNECT_TIMEOUT), &hello, implicit, None)
            .await
            .map_err(|e| before_data(smtp, "cannot connect to", &e))?;
    if smtp.tls == Tls::StartTls {
        if !connection.can_starttls() {
            return Err(Failure::Final(format!(
                "the SMTP server {} does not offer STARTTLS, and Hermes never logs in unencrypted \
                 (for implicit TLS set EMAIL_SMTP_PORT=465 or EMAIL_SMTP_TLS=implicit)",
                smtp.server()
            )));
        }
        connection
            .starttls(smtp.tls_parameters()?, &hello)
            .await
            .map_err(|e| before_data(smtp, "cannot start TLS with", &e))?;
    }
    let credentials = Credentials::new(smtp.login.clone(), smtp.password.clone());
    connection
        .auth(&[Mechanism::Plain, Mechanism::Login], &credentials)
        .await
        .map_err(|e| before_data(smtp, "the login was refused by", &e))?;
    let steps = async {
        connection
            .command(Mail::new(envelope.from().cloned(), Vec::new()))
            .await?;
        for to in envelope.to() {
            connection
                .command(Rcpt::new(to.clone(), Vec::new()))
                .await?;
        }
        connection.command(Data).await
    };
    steps
        .await
        .map_err(|e| before_data(smtp, "the message was refused by", &e))?;
    Ok(connection)
}

/// A failure before the data went out: the message cannot have arrived. A 5xx, a TLS
/// failure (an untrusted certificate) and what the client itself refuses are final;
/// a 4xx and a lost or refused connection are worth another try.
fn before_data(smtp: &Smtp, what: &str, e: &SmtpError) -> Failure {
    let server = smtp.server();
    if let Some(reply) = reply_of(e) {
        let text = format!("{what} the SMTP server {server}: {reply}");
        return match e.is_permanent() {
            true => Failure::Final(text),
            false => Failure::Transient(text),
        };
    }
    if let Some(tls) = tls_refusal(e) {
        return Failure::Final(format!(
            "TLS with the SMTP server {server} failed: {tls} (a private CA or a self-signed \
             server: point SSL_CERT_FILE at its certificate)"
        ));
    }
    if e.is_client() {
        return Failure::Final(format!("{what} the SMTP server {server}: {}", chain(e)));
    }
    Failure::Transient(format!("{what} the SMTP server {server}: {}", chain(e)))
}

/// What TLS itself refused (an untrusted or mismatched certificate, no common
/// cipher), which no retry fixes; lettre wraps it in an I/O error, whose `source()`
/// skips it, so each I/O error of the chain is opened.
fn tls_refusal(e: &SmtpError) -> Option<String> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(current) = cause {
        if let Some(tls) = current.downcast_ref::<rustls::Error>() {
            return Some(tls.to_string());
        }
        let wrapped = current
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<rustls::Error>());
        if let Some(tls) = wrapped {
            return Some(tls.to_string());
        }
        cause = current.source();
    }
    e.is_tls().then(|| chain(e))
}

/// A failure once the data went out: the server's 4xx or 5xx answer says the message
/// was not taken; anything else (a lost connection, an unreadable answer) leaves it
/// unknown whether it arrived.
fn after_data(e: &SmtpError) -> Failure {
    match reply_of(e) {
        Some(reply) if e.is_permanent() => {
            Failure::Final(format!("the SMTP server refused the message: {reply}"))
        }
        Some(reply) => Failure::Transient(format!("the SMTP server deferred the message: {reply}")),
        None => Failure::Unknown(format!(
            "the connection failed after the message was sent ({}); not resent, to never send it twice",
            chain(e)
        )),
    }
}

/// The server's own reply to a refused command: `535 5.7.8 Authentication credentials
/// invalid`.
fn reply_of(e: &SmtpError) -> Option<String> {
    let code = e.status()?;
    let text = std::error::Error::source(e)
        .map(|s| s.to_string())
        .unwrap_or_default();
    Some(format!("{code} {text}").trim().to_string())
}

/// An error with its causes, on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let text = super::http::error_chain(e);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_html_and_raw_html_stays_text() {
        let html = html_of(
            "First **bold** paragraph.\n\nSecond <script>alert(1)</script>.\n\n```sh\ndf -h <dir>\n```\n",
        );
        assert!(
            html.contains("<p>First <strong>bold</strong> paragraph.</p>"),
            "{html}"
        );
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(!html.contains("<script>"), "{html}");
        assert!(
            html.contains("<pre><code class=\"language-sh\">df -h &lt;dir&gt;\n</code></pre>"),
            "{html}"
        );
    }

    #[test]
    fn the_port_chooses_tls_unless_told() {
        let env = |pairs: &[(&str, &str)]| {
            let mut all = vec![
                ("EMAIL_ADDRESS", "hermes@example.com"),
                ("EMAIL_PASSWORD", "pw"),
                ("EMAIL_SMTP_HOST", "smtp.example.com"),
            ];
            all.extend_from_slice(pairs);
            Smtp::from_env(&Environment::from_pairs(&all))
        };
        let tls = |pairs: &[(&str, &str)]| env(pairs).map(|s| (s.port, s.tls)).ok();
        assert_eq!(tls(&[]), Some((587, Tls::StartTls)));
        assert_eq!(
            tls(&[("EMAIL_SMTP_PORT", "465")]),
            Some((465, Tls::Implicit))
        );
        assert_eq!(
            tls(&[("EMAIL_SMTP_PORT", "2465"), ("EMAIL_SMTP_TLS", "Implicit")]),
            Some((2465, Tls::Implicit))
        );
        let refused = |pairs: &[(&str, &str)]| match env(pairs) {
            Err(Failure::Final(m)) => m,
            _ => String::new(),
        };
        assert!(refused(&[("EMAIL_SMTP_PORT", "smtp")]).contains("EMAIL_SMTP_PORT 'smtp'"));
        assert!(refused(&[("EMAIL_SMTP_TLS", "none")]).contains("EMAIL_SMTP_TLS 'none'"));
    }
}
