//! A minimal W3C WebDriver client for the dashboard test: starts Debian's `chromedriver`
//! on a free port, opens a headless Chromium session with a fresh profile, and speaks
//! the protocol's JSON over plain HTTP/1.1 on loopback (no extra crates: the few calls
//! the test needs are a dozen lines each).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{json, Value};

/// The WebDriver element reference key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A free loopback port (bound then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// One HTTP/1.1 request with a JSON body; returns status and JSON body (status 0 when
/// nothing listens on the port yet).
pub fn http_json(port: u16, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let payload = body.map(Value::to_string).unwrap_or_default();
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return (0, Value::Null);
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("set a read timeout");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{payload}",
        payload.len()
    );
    stream.write_all(request.as_bytes()).expect("send");
    // chromedriver answers `Connection: close` but keeps the socket open: read by length.
    let mut reader = BufReader::new(stream);
    let mut status_line = String::new();
    reader
        .read_line(&mut status_line)
        .expect("read the status line");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let (mut length, mut chunked) = (None, false);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).expect("read a header") == 0 || line.trim().is_empty() {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(value) = lower.strip_prefix("content-length:") {
            length = value.trim().parse::<usize>().ok();
        }
        chunked |= lower.starts_with("transfer-encoding:") && lower.contains("chunked");
    }
    let body = match length {
        Some(n) => {
            let mut bytes = vec![0; n];
            reader.read_exact(&mut bytes).expect("read the body");
            String::from_utf8_lossy(&bytes).into_owned()
        }
        None => {
            let mut rest = String::new();
            let _ = reader.read_to_string(&mut rest);
            if chunked {
                dechunk(&rest)
            } else {
                rest
            }
        }
    };
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].trim_start_matches("\r\n");
    }
    out
}

/// A running chromedriver with one browser session.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium with the flags a closed network needs
    /// (no background connections, no first-run, no sandbox as root).
    pub fn start(profile: &std::path::Path) -> Browser {
        let port = free_port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver (scripts/dashboard/setup.sh installs it)");
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        let args = [
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--window-size=1400,900",
            &format!("--user-data-dir={}", profile.display()),
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": "/usr/bin/chromium", "args": args},
            "goog:loggingPrefs": {"browser": "ALL"},
            "unhandledPromptBehavior": "ignore",
        }}});
        let (status, body) = http_json(port, "POST", "/session", Some(&capabilities));
        assert_eq!(status, 200, "new session: {body}");
        let session = body["value"]["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        Browser {
            driver,
            port,
            session,
        }
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.session);
        let (status, reply) = http_json(self.port, method, &path, body.as_ref());
        assert_eq!(status, 200, "{method} {path}: {reply}");
        reply["value"].clone()
    }

    pub fn open(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    /// The element matching `css`, waiting up to 10 s for it to be displayed.
    pub fn find(&self, css: &str) -> String {
        let mut found = None;
        self.wait(&format!("{css} to show"), || {
            let (status, reply) = http_json(
                self.port,
                "POST",
                &format!("/session/{}/element", self.session),
                Some(&json!({"using": "css selector", "value": css})),
            );
            let id = reply["value"][ELEMENT].as_str().map(str::to_string);
            let shown = match (status, &id) {
                // An element the page replaced meanwhile is looked for again.
                (200, Some(id)) => {
                    let path = format!("/session/{}/element/{id}/displayed", self.session);
                    let (status, reply) = http_json(self.port, "GET", &path, None);
                    status == 200 && reply["value"] == json!(true)
                }
                _ => false,
            };
            if shown {
                found = id;
            }
            shown
        });
        found.unwrap_or_default()
    }

    /// Clicks the element matching `css`; when the page re-renders it between finding
    /// and clicking (a refreshed list), the new one is found and clicked.
    pub fn click(&self, css: &str) {
        for _ in 0..20 {
            let id = self.find(css);
            let path = format!("/session/{}/element/{id}/click", self.session);
            let (status, reply) = http_json(self.port, "POST", &path, Some(&json!({})));
            if status == 200 {
                return;
            }
            let stale = reply["value"]["error"] == json!("stale element reference");
            assert!(stale, "POST {path}: {reply}");
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("{css} was replaced by the page at every click");
    }

    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.call("POST", &format!("/element/{id}/clear"), Some(json!({})));
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        );
    }

    pub fn text(&self, css: &str) -> String {
        let id = self.find(css);
        self.call("GET", &format!("/element/{id}/text"), None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// Runs `script` in the page and returns its value.
    pub fn eval(&self, script: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
    }

    pub fn accept_alert(&self) {
        self.wait("a confirmation dialog", || {
            let path = format!("/session/{}/alert/accept", self.session);
            http_json(self.port, "POST", &path, Some(&json!({}))).0 == 200
        });
    }

    /// Waits up to 10 s for `check`, polling.
    pub fn wait(&self, what: &str, mut check: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !check() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until the text of `css` contains `needle`.
    pub fn wait_text(&self, css: &str, needle: &str) -> String {
        let mut last = String::new();
        self.wait(&format!("{css} to contain {needle:?}"), || {
            last = self.text(css);
            last.contains(needle)
        });
        last
    }

    /// The page's console messages at warning level or above (chromedriver's log).
    pub fn console_problems(&self) -> Vec<String> {
        let path = format!("/session/{}/se/log", self.session);
        let (_, reply) = http_json(self.port, "POST", &path, Some(&json!({"type": "browser"})));
        reply["value"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|entry| matches!(entry["level"].as_str(), Some("SEVERE" | "WARNING")))
            .map(|entry| entry["message"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Saves a PNG of the viewport.
    pub fn screenshot(&self, path: &std::path::Path) {
        let data = self.call("GET", "/screenshot", None);
        let png = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap_or_default())
            .expect("a base64 screenshot");
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("create the screenshot folder");
        }
        std::fs::write(path, png).expect("write the screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let path = format!("/session/{}", self.session);
        let _ = std::panic::catch_unwind(|| http_json(self.port, "DELETE", &path, None));
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
