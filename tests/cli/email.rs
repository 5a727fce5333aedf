//! Email delivery through the real binary against a real SMTP server: aiosmtpd
//! (tests/fixtures/email/smtp_server.py, venv from scripts/email/setup.sh) with a
//! self-signed certificate it makes for each test, trusted through SSL_CERT_FILE, and a
//! login it checks. Each message it takes is read back as Python's email parser sees
//! it: headers, MIME structure, decoded parts.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::Value;

use crate::delivery::{add_job, home, run, wrapped};
use crate::support::Hermes;

const ACCOUNT: &str = "hermes@example.com";
const PASSWORD: &str = "app-pass-4f9c2a71";

/// The python of the email test venv, built by scripts/email/setup.sh when missing.
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        crate::support::venv_python("email", "the email tests need aiosmtpd from PyPI")
    })
}

/// The SMTP server on 127.0.0.1, its files in a temp dir; killed when dropped.
struct Server {
    child: std::process::Child,
    dir: tempfile::TempDir,
    port: String,
}

impl Server {
    /// Starts the server with `flags` (`--implicit`, `--fail-first 451`, ...).
    fn start(flags: &[&str]) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/email/smtp_server.py");
        let child = std::process::Command::new(python())
            .arg(script)
            .args(["--dir", dir.path().to_str().unwrap()])
            .args(["--user", ACCOUNT, "--password", PASSWORD])
            .args(flags)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let portfile = dir.path().join("port");
        let started = Instant::now();
        while !portfile.exists() && started.elapsed() < Duration::from_secs(30) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let port = fs::read_to_string(&portfile).expect("the SMTP server started");
        Server { child, dir, port }
    }

    /// The self-signed certificate the server presents.
    fn cert(&self) -> String {
        self.dir.path().join("cert.pem").display().to_string()
    }

    /// The `.env` lines of an account on this server; `EMAIL_HOME_ADDRESS` is ops@.
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("EMAIL_ADDRESS", ACCOUNT.to_string()),
            ("EMAIL_PASSWORD", PASSWORD.to_string()),
            ("EMAIL_SMTP_HOST", "localhost".to_string()),
            ("EMAIL_SMTP_PORT", self.port.clone()),
            ("EMAIL_HOME_ADDRESS", "ops@example.com".to_string()),
            ("SSL_CERT_FILE", self.cert()),
        ]
    }

    /// Every message taken, in order, as the server parsed it.
    fn mails(&self) -> Vec<Value> {
        let dir = self.dir.path().join("mail");
        let mut names: Vec<PathBuf> = match fs::read_dir(&dir) {
            Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
            Err(_) => Vec::new(),
        };
        names.retain(|p| p.extension().is_some_and(|e| e == "json"));
        names.sort();
        names
            .iter()
            .map(|p| serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap())
            .collect()
    }

    /// What the clients did (`AUTH PLAIN ok`, `DATA 1`, ...), one event a line.
    fn events(&self) -> Vec<String> {
        fs::read_to_string(self.dir.path().join("events.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn header(mail: &Value, name: &str) -> String {
    let headers = mail["headers"].as_array().cloned().unwrap_or_default();
    let found: Vec<String> = headers
        .iter()
        .filter(|h| h[0].as_str().is_some_and(|n| n.eq_ignore_ascii_case(name)))
        .map(|h| h[1].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(found.len(), 1, "{name} once in {headers:?}");
    found[0].clone()
}

/// The decoded text of the part of this type, line ends as a reader gets them.
fn text_part(mail: &Value, content_type: &str) -> String {
    let parts = mail["parts"].as_array().cloned().unwrap_or_default();
    let part = parts
        .iter()
        .find(|p| p["content_type"] == content_type)
        .unwrap_or_else(|| panic!("no {content_type} part in {parts:?}"));
    assert_eq!(part["charset"], "utf-8", "{part}");
    part["text"]
        .as_str()
        .unwrap_or_default()
        .replace("\r\n", "\n")
}

fn job_status(hermes: &Hermes, id: &str) -> (String, String) {
    let job = hermes.job(id);
    (
        job["last_status"].as_str().unwrap_or_default().to_string(),
        job["last_delivery_error"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

const PNG: &[u8] = b"\x89PNG\r\n\x1a\nnot-really-a-png";

#[test]
fn a_rich_reply_arrives_once_over_starttls_as_text_html_and_the_attachment() {
    let server = Server::start(&[]);
    let hermes = home("", &server.env());
    let chart = hermes.home().join("chart.png");
    fs::write(&chart, PNG).unwrap();
    let body = "Disk usage is **fine** on all hosts, see [the dashboard](https://grafana.example.com).\n\n\
                Backups finished at 03:12; nothing to do.\n\n\
                ```sh\ndf -h /srv\n```\n\n\
                Next check tomorrow.";
    let reply = format!("{body}\nMEDIA:{}\n", chart.display());
    fs::write(hermes.home().join("scripts/reply.txt"), reply).unwrap();
    let id = add_job(&hermes, "email", &[]);
    let before = chrono::Utc::now() - chrono::Duration::seconds(2);
    run(&hermes, &id);
    let after = chrono::Utc::now() + chrono::Duration::seconds(2);

    let mails = server.mails();
    assert_eq!(mails.len(), 1, "{mails:?}");
    let mail = &mails[0];
    assert_eq!(mail["tls"], true, "STARTTLS before anything else");
    assert_eq!(mail["login"], ACCOUNT);
    assert_eq!(mail["mail_from"], ACCOUNT);
    assert_eq!(mail["rcpt_tos"], serde_json::json!(["ops@example.com"]));
    assert_eq!(header(mail, "From"), ACCOUNT);
    assert_eq!(header(mail, "To"), "ops@example.com");
    assert_eq!(header(mail, "Subject"), "Hermes Agent");
    assert_eq!(header(mail, "MIME-Version"), "1.0");
    let date =
        chrono::DateTime::parse_from_rfc2822(&header(mail, "Date")).expect("an RFC 5322 date");
    assert!(before <= date && date <= after, "{date}");
    let message_id = header(mail, "Message-ID");
    let local = message_id
        .strip_prefix("<hermes-")
        .and_then(|s| s.strip_suffix("@example.com>"))
        .unwrap_or_default();
    assert!(
        local.len() == 12 && local.chars().all(|c| c.is_ascii_hexdigit()),
        "{message_id}"
    );
    assert_eq!(
        mail["structure"],
        "multipart/mixed[multipart/alternative[text/plain, text/html], image/png]"
    );

    let expected = wrapped(body).replace("{id}", &id);
    assert_eq!(text_part(mail, "text/plain").trim_end(), expected);
    let html = text_part(mail, "text/html");
    for piece in [
        "<strong>fine</strong>",
        "<a href=\"https://grafana.example.com\">the dashboard</a>",
        "<p>Backups finished at 03:12; nothing to do.</p>",
        "<pre><code class=\"language-sh\">df -h /srv\n</code></pre>",
        "<p>Next check tomorrow.</p>",
        "To stop or manage this job, send me a new message",
    ] {
        assert!(html.contains(piece), "{piece} missing from\n{html}");
    }
    assert!(!html.contains("MEDIA:"), "{html}");

    let parts = mail["parts"].as_array().unwrap();
    let file = &parts[2];
    assert_eq!(file["disposition"], "attachment");
    assert_eq!(file["filename"], "chart.png");
    assert_eq!(
        file["base64"],
        base64::engine::general_purpose::STANDARD.encode(PNG)
    );
    assert_eq!(job_status(&hermes, &id), ("ok".to_string(), String::new()));

    // Delivered is delivered: a later pass sends nothing again.
    hermes.cron_at("2026-03-01T10:30:00Z", &["tick"]).ok();
    assert_eq!(server.mails().len(), 1);
}

#[test]
fn implicit_tls_on_its_own_port_delivers_to_a_named_address() {
    let server = Server::start(&["--implicit"]);
    let mut env = server.env();
    env.push(("EMAIL_SMTP_TLS", "implicit".to_string()));
    let hermes = home("All 12 services are healthy.\n", &env);
    let id = add_job(&hermes, "email:boss@example.com", &[]);
    run(&hermes, &id);

    let mails = server.mails();
    assert_eq!(mails.len(), 1, "{mails:?}");
    let mail = &mails[0];
    assert_eq!(mail["tls"], true);
    assert_eq!(mail["login"], ACCOUNT);
    assert_eq!(mail["rcpt_tos"], serde_json::json!(["boss@example.com"]));
    assert_eq!(header(mail, "To"), "boss@example.com");
    assert_eq!(
        mail["structure"],
        "multipart/alternative[text/plain, text/html]"
    );
    let expected = wrapped("All 12 services are healthy.").replace("{id}", &id);
    assert_eq!(text_part(mail, "text/plain").trim_end(), expected);
    assert!(text_part(mail, "text/html").contains("<p>All 12 services are healthy.</p>"));
    assert_eq!(job_status(&hermes, &id).0, "ok");
}

#[test]
fn a_wrong_password_is_a_final_delivery_failure_with_the_servers_text() {
    let server = Server::start(&[]);
    let mut env = server.env();
    let spoiled = "wrong-password-0000000000";
    env[1].1 = spoiled.to_string();
    let hermes = home("report\n", &env);
    let id = add_job(&hermes, "email", &[]);
    run(&hermes, &id);

    let (status, error) = job_status(&hermes, &id);
    assert_eq!(status, "delivery_failed");
    assert!(
        error.starts_with(
            "email:ops@example.com: the login was refused by the SMTP server localhost:"
        ),
        "{error}"
    );
    assert!(
        error.ends_with(": 535 5.7.8 Authentication credentials invalid"),
        "{error}"
    );
    assert!(!error.contains(spoiled), "leaked: {error}");
    assert!(server.mails().is_empty());
    assert_eq!(server.events(), ["AUTH PLAIN refused"], "tried once");

    // Final: the outbox never tries it again.
    hermes.cron_at("2026-03-01T10:30:00Z", &["tick"]).ok();
    assert_eq!(server.events(), ["AUTH PLAIN refused"]);
}

#[test]
fn a_deferred_message_is_retried_within_the_run_and_arrives_once() {
    let server = Server::start(&["--fail-first", "451"]);
    let hermes = home("All 12 services are healthy.\n", &server.env());
    let id = add_job(&hermes, "email", &[]);
    run(&hermes, &id);

    assert_eq!(
        server.events(),
        ["AUTH PLAIN ok", "DATA 1", "AUTH PLAIN ok", "DATA 2"]
    );
    let mails = server.mails();
    assert_eq!(mails.len(), 1, "{mails:?}");
    assert!(text_part(&mails[0], "text/plain").contains("All 12 services are healthy."));
    assert_eq!(job_status(&hermes, &id), ("ok".to_string(), String::new()));
}

#[test]
fn a_connection_lost_after_the_data_went_out_is_never_resent() {
    let server = Server::start(&["--drop-after-data"]);
    let hermes = home("report\n", &server.env());
    let id = add_job(&hermes, "email", &[]);
    run(&hermes, &id);

    let (status, error) = job_status(&hermes, &id);
    assert_eq!(status, "delivery_failed");
    assert!(error.contains("after the message was sent"), "{error}");
    assert!(error.contains("not resent"), "{error}");
    assert!(!error.contains("(will retry)"), "{error}");
    assert_eq!(server.mails().len(), 1, "the server kept it");
    hermes.cron_at("2026-03-01T10:30:00Z", &["tick"]).ok();
    assert_eq!(server.events(), ["AUTH PLAIN ok", "DATA 1"], "never resent");
}

#[test]
fn an_untrusted_certificate_is_refused_before_the_login() {
    let server = Server::start(&[]);
    let env: Vec<_> = server
        .env()
        .into_iter()
        .filter(|(k, _)| *k != "SSL_CERT_FILE")
        .collect();
    let hermes = home("report\n", &env);
    let id = add_job(&hermes, "email", &[]);
    run(&hermes, &id);

    let (status, error) = job_status(&hermes, &id);
    assert_eq!(status, "delivery_failed");
    assert!(
        error.contains("TLS with the SMTP server localhost:"),
        "{error}"
    );
    assert!(error.contains("SSL_CERT_FILE"), "{error}");
    assert!(
        server.events().is_empty(),
        "no login: {:?}",
        server.events()
    );
}

#[test]
fn doctor_names_the_missing_email_credential_and_home_address() {
    let hermes = home(
        "report\n",
        &[
            ("EMAIL_ADDRESS", ACCOUNT.to_string()),
            ("EMAIL_SMTP_HOST", "smtp.example.com".to_string()),
        ],
    );
    let home_job = add_job(&hermes, "email", &[]);
    let named_job = add_job(&hermes, "email:boss@example.com", &[]);
    let out = hermes.cron(&["doctor"]);
    assert_eq!(out.code, Some(1));
    let says = |id: &str, var: &str| {
        out.stdout
            .lines()
            .any(|l| l.contains(id) && l.contains(var) && l.contains("not set"))
    };
    assert!(says(&home_job, "EMAIL_HOME_ADDRESS"), "{}", out.stdout);
    assert!(says(&named_job, "EMAIL_PASSWORD"), "{}", out.stdout);
    assert!(!says(&named_job, "EMAIL_HOME_ADDRESS"), "{}", out.stdout);
    assert!(!out.stdout.contains("EMAIL_SMTP_HOST"), "{}", out.stdout);
    assert!(
        !out.stdout.contains("cannot send to email"),
        "{}",
        out.stdout
    );
}
