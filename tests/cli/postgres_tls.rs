//! The PostgreSQL store over TLS, through the real binary, against a real cluster with
//! `ssl=on` whose pg_hba.conf takes TCP connections over TLS only (hostssl), with a CA
//! made for the run (`scripts/postgres/test-cluster.sh --tls`): libpq's sslmodes, the
//! root CA, client certificates, and what the user reads when TLS fails.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::support::{create_database, succeeded, Hermes};

/// The TLS cluster this test process shares: its socket URL (for psql), TCP port and
/// certificate directory.
struct Cluster {
    socket: String,
    port: u16,
    certs: String,
}

fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Cluster> = OnceLock::new();
    CLUSTER.get_or_init(|| {
        let port = free_port();
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/postgres/test-cluster.sh"
        );
        let out = succeeded(Command::new("bash").args([
            script,
            &std::process::id().to_string(),
            "--tls",
            &port.to_string(),
        ]));
        let mut lines = out.lines();
        let cluster = Cluster {
            socket: lines.next().unwrap().to_string(),
            port,
            certs: lines.next().unwrap().to_string(),
        };
        psql(&cluster.socket, "CREATE ROLE certuser LOGIN");
        cluster
    })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn psql(url: &str, sql: &str) -> String {
    succeeded(Command::new("psql").args([url, "-Atc", sql]))
}

/// A fresh database on the TLS cluster; returns its name.
fn database() -> String {
    let name = format!("tls{:016x}", rand::random::<u64>());
    create_database(&cluster().socket, &name);
    name
}

/// A TCP URL of database `db` on `host`, with the query `options`.
fn url(host: &str, db: &str, options: &str) -> String {
    format!(
        "postgresql://postgres@{host}:{}/{db}?{options}",
        cluster().port
    )
}

fn cert(name: &str) -> String {
    format!("{}/{name}", cluster().certs)
}

/// A command that failed because the store could not be reached: its one-line message.
#[track_caller]
fn refused(home: &Hermes, args: &[&str]) -> String {
    let run = home.cron(args);
    assert_ne!(run.code, Some(0), "{args:?} succeeded: {}", run.stdout);
    let message = run.stderr.trim_end();
    assert!(!message.contains('\n'), "not one line: {message}");
    message.to_string()
}

fn home_on(url: &str) -> Hermes {
    let mut home = Hermes::new();
    home.store_url = Some(url.to_string());
    home
}

/// The connections open to `db`: how many, and whether every one is over TLS.
fn connections(db: &str) -> (u32, bool) {
    let row = psql(
        &cluster().socket,
        &format!(
            "SELECT count(*), coalesce(bool_and(s.ssl), true) FROM pg_stat_activity a \
             JOIN pg_stat_ssl s ON s.pid = a.pid WHERE a.datname = '{db}'"
        ),
    );
    let (count, all) = row.split_once('|').unwrap();
    (count.parse().unwrap(), all == "t")
}

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        // SAFETY: signalling the daemon this test started and has not reaped.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

fn daemon(home: &Hermes) -> Daemon {
    let mut command = home.command(&["cron", "daemon"]);
    command
        .env_remove("HERMES_NOW")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    Daemon(command.spawn().unwrap())
}

#[test]
fn verify_full_with_the_right_ca_connects_and_every_connection_of_every_host_is_encrypted() {
    let db = database();
    let options = format!("sslmode=verify-full&sslrootcert={}", cert("ca.crt"));
    // By the name and by the address the certificate lists.
    let by_name = home_on(&url("localhost", &db, &options));
    let by_address = home_on(&url("127.0.0.1", &db, &options));
    let id = by_name.add("every 1h", "Summarize the logs", &["--name", "over tls"]);
    assert!(by_address.cron(&["list"]).ok().contains(&id));
    let (_a, _b) = (daemon(&by_name), daemon(&by_address));
    // Each daemon holds pooled connections and one that LISTENs.
    let start = Instant::now();
    let mut seen = connections(&db);
    while seen.0 < 4 && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(200));
        seen = connections(&db);
    }
    assert!(seen.0 >= 4, "two daemons hold {} connections", seen.0);
    assert!(seen.1, "a connection of the store is not over TLS");
}

#[test]
fn a_server_signed_by_another_ca_is_refused_naming_the_mode() {
    let db = database();
    let home = home_on(&url(
        "localhost",
        &db,
        &format!("sslmode=verify-full&sslrootcert={}", cert("other-ca.crt")),
    ));
    let message = refused(&home, &["list"]);
    assert!(
        message.contains("TLS with sslmode=verify-full failed")
            && message.contains("not signed by a CA in")
            && message.contains("other-ca.crt"),
        "{message}"
    );
    let home = home_on(&url(
        "localhost",
        &db,
        &format!("sslmode=verify-ca&sslrootcert={}", cert("other-ca.crt")),
    ));
    assert!(refused(&home, &["list"]).contains("sslmode=verify-ca"));
}

#[test]
fn verify_full_checks_the_host_name_and_verify_ca_does_not() {
    let db = database();
    // Connect to 127.0.0.1 while naming a host the certificate does not list.
    let options = |mode: &str| {
        format!(
            "sslmode={mode}&sslrootcert={}&hostaddr=127.0.0.1",
            cert("ca.crt")
        )
    };
    let home = home_on(&url("db.example.net", &db, &options("verify-full")));
    let message = refused(&home, &["list"]);
    assert!(
        message.contains("sslmode=verify-full")
            && message.contains("not valid for the host 'db.example.net'"),
        "{message}"
    );
    let home = home_on(&url("db.example.net", &db, &options("verify-ca")));
    home.cron(&["list"]).ok();
}

#[test]
fn require_and_the_default_prefer_encrypt_without_a_ca() {
    let db = database();
    home_on(&url("localhost", &db, "sslmode=require")).add("every 1h", "one", &[]);
    // No sslmode: libpq's prefer, which must take TLS where the server only allows it.
    let plain = home_on(&format!(
        "postgresql://postgres@localhost:{}/{db}",
        cluster().port
    ));
    plain.add("every 1h", "two", &[]);
    assert_eq!(
        plain
            .cron(&["list", "--json"])
            .ok()
            .matches("\"id\"")
            .count(),
        2
    );
    // disable never tries, and this server takes no clear text over TCP.
    let message = refused(
        &home_on(&url("localhost", &db, "sslmode=disable")),
        &["list"],
    );
    assert!(message.contains("no encryption"), "{message}");
}

#[test]
fn a_client_certificate_logs_in_where_the_server_asks_for_one() {
    let db = database();
    psql(
        &cluster().socket,
        &format!("ALTER DATABASE {db} OWNER TO certuser"),
    );
    let with_cert = format!(
        "postgresql://certuser@localhost:{}/{db}?sslmode=verify-full&sslrootcert={}&sslcert={}&sslkey={}",
        cluster().port,
        cert("ca.crt"),
        cert("client.crt"),
        cert("client.key")
    );
    home_on(&with_cert).add("every 1h", "by certificate", &[]);
    let without = format!(
        "postgresql://certuser@localhost:{}/{db}?sslmode=verify-full&sslrootcert={}",
        cluster().port,
        cert("ca.crt")
    );
    let message = refused(&home_on(&without), &["list"]);
    assert!(message.contains("certificate"), "{message}");
}

#[test]
fn a_missing_root_file_and_an_unknown_mode_are_refused_before_connecting() {
    let home = home_on("postgresql://postgres@localhost:1/x?sslmode=verify-ca");
    let message = refused(&home, &["list"]);
    assert!(
        message.contains("sslmode=verify-ca needs the CA certificate")
            && message.contains(".postgresql/root.crt"),
        "{message}"
    );
    let home = home_on("postgresql://postgres@localhost:1/x?sslmode=verify-all");
    let message = refused(&home, &["list"]);
    assert!(
        message.contains("sslmode 'verify-all' is not a mode"),
        "{message}"
    );
}

/// A server that answers the TLS request with "no", as PostgreSQL with ssl=off does.
#[test]
fn require_against_a_server_without_tls_names_the_mode() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(4) {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 8];
            if stream.read_exact(&mut request).is_ok() {
                let _ = stream.write_all(b"N");
            }
        }
    });
    let home = home_on(&format!(
        "postgresql://postgres@127.0.0.1:{port}/x?sslmode=require"
    ));
    let message = refused(&home, &["list"]);
    assert!(
        message.contains("TLS with sslmode=require failed: the server does not accept TLS"),
        "{message}"
    );
}
