//! Delivery formatting and Discord pacing:
//!
//! 1. render + split throughput: a 20 kB reply (prose with emphasis and links, lists,
//!    code blocks, a table) parsed, rendered and split for each rendering at its
//!    platform's limit, timed over many rounds (the delivery crate's `format`, the
//!    code the binary runs);
//! 2. Discord pacing: the real binary delivers a long reply (`PARTS`, default 30 parts)
//!    to a local fake that enforces a bucket of 5 messages per second per channel with
//!    Discord's rate-limit headers and answers 429 over it; prints messages per second
//!    held and the 429s met.
//!
//! A plain `harness = false` binary. Under `cargo bench` it measures; run any other way
//! (`cargo test --benches`) it does a small smoke run.

use std::fs;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// Shared with the other benches, which use the rest of it.
#[allow(unused)]
mod common;
// The delivery crate's own formatting, the code the binary runs.
use delivery::format::{self, Rendering};

/// A platform's length of a text (characters, UTF-16 units).
type Measure = dyn Fn(&str) -> usize;

/// A reply of about `bytes` bytes, in the shapes models write.
fn reply(bytes: usize) -> String {
    let mut text = String::new();
    let mut n = 0;
    while text.len() < bytes {
        text.push_str(&format!(
            "## Section {n}\n\nThe **service** `api_{n}` answered _within_ budget; see \
             [the dashboard](https://grafana.example.com/d/{n}) & the <log> for details. \
             Error rate 0.{n}% — nothing to do.\n\n\
             - checked *disk* and **memory**\n- restarted `worker-{n}`\n  1. drained\n  2. resumed\n\n\
             ```sh\ndf -h /srv/{n}\nsystemctl status api-{n} | head -n 20\n```\n\n\
             | host | load |\n|---|---|\n| web-{n} | 0.{n} |\n\n"
        ));
        n += 1;
    }
    text
}

fn render_and_split(rounds: usize) {
    let text = reply(20_000);
    let chars = |s: &str| s.chars().count();
    let utf16 = |s: &str| s.encode_utf16().count();
    let cases: [(&str, Rendering, usize, &Measure); 5] = [
        (
            "Telegram HTML (4096 UTF-16)",
            Rendering::TelegramHtml,
            4096,
            &utf16,
        ),
        ("Slack mrkdwn (3900)", Rendering::SlackMrkdwn, 3900, &chars),
        (
            "Markdown / Discord (2000)",
            Rendering::Markdown,
            2000,
            &chars,
        ),
        ("HTML / Matrix (16000)", Rendering::Html, 16_000, &chars),
        ("plain / SMS (1600)", Rendering::Plain, 1600, &chars),
    ];
    println!(
        "[1] render + split of a {} byte reply, {rounds} rounds each",
        text.len()
    );
    for (name, rendering, limit, measure) in cases {
        let parts = format::split_parts(&text, rendering, limit, measure).len();
        let start = Instant::now();
        for _ in 0..rounds {
            std::hint::black_box(format::split_parts(
                std::hint::black_box(&text),
                rendering,
                limit,
                measure,
            ));
        }
        let per = start.elapsed() / rounds as u32;
        let mb_s = text.len() as f64 / per.as_secs_f64() / 1e6;
        println!(
            "    {name:<28} {parts:>3} parts  {:>8.3} ms per reply  {mb_s:>6.1} MB/s",
            common::ms(per)
        );
    }
}

/// The fake Discord: 5 messages per 1 s window per channel, announced in the rate-limit
/// headers; over the limit, a 429 (counted).
fn discord_fake(
    limited: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) -> (u16, std::thread::JoinHandle<Vec<Instant>>) {
    let server = tiny_http::Server::http("127.0.0.1:0").expect("bind the fake");
    let port = server.server_addr().to_ip().map(|a| a.port()).unwrap_or(0);
    let thread = std::thread::spawn(move || {
        let window: Mutex<(Option<Instant>, u32)> = Mutex::new((None, 0));
        let mut accepted = Vec::new();
        while !stop.load(Ordering::SeqCst) {
            let Ok(Some(mut request)) = server.recv_timeout(Duration::from_millis(20)) else {
                continue;
            };
            let mut body = Vec::new();
            let _ = request.as_reader().read_to_end(&mut body);
            let now = Instant::now();
            let mut w = window.lock().unwrap_or_else(|p| p.into_inner());
            if w.0
                .is_none_or(|start| now >= start + Duration::from_secs(1))
            {
                *w = (Some(now), 0);
            }
            let reset_after = (w.0.unwrap_or(now) + Duration::from_secs(1) - now).as_secs_f64();
            let over = w.1 >= 5;
            if !over {
                w.1 += 1;
                accepted.push(now);
            }
            let header = |k: &str, v: String| tiny_http::Header::from_bytes(k, v).ok();
            let headers = [
                header("X-RateLimit-Limit", "5".into()),
                header("X-RateLimit-Remaining", (5 - w.1).to_string()),
                header("X-RateLimit-Reset-After", format!("{reset_after:.3}")),
                header("X-RateLimit-Bucket", "bench-bucket".into()),
                header("Content-Type", "application/json".into()),
            ];
            let (status, text) = if over {
                limited.fetch_add(1, Ordering::SeqCst);
                (429, format!("{{\"message\":\"You are being rate limited.\",\"retry_after\":{reset_after:.3},\"global\":false}}"))
            } else {
                (200, "{\"id\":\"1\",\"channel_id\":\"777\"}".to_string())
            };
            let mut response = tiny_http::Response::from_string(text).with_status_code(status);
            for h in headers.into_iter().flatten() {
                response.add_header(h);
            }
            let _ = request.respond(response);
        }
        accepted
    });
    (port, thread)
}

fn discord_pacing(parts: usize) {
    let limited = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (port, fake) = discord_fake(Arc::clone(&limited), Arc::clone(&stop));
    let home = tempfile::tempdir().expect("temp home");
    let scripts = home.path().join("scripts");
    fs::create_dir_all(&scripts).expect("scripts dir");
    let reply: String = (0..parts)
        .map(|n| format!("Section {n:03}: {}\n\n", "status nominal ".repeat(125)))
        .collect();
    fs::write(scripts.join("reply.txt"), reply).expect("reply");
    fs::write(scripts.join("report.sh"), "cat reply.txt\n").expect("script");
    fs::write(
        home.path().join(".env"),
        format!("DISCORD_BOT_TOKEN=bench-token\nDISCORD_API_BASE=http://127.0.0.1:{port}\n"),
    )
    .expect(".env");
    let bin = common::hermes_binary();
    let hermes = |args: &[&str]| {
        Command::new(&bin)
            .args(args)
            .env("HERMES_HOME", home.path())
            .env("HERMES_TIMEZONE", "UTC")
            .stdin(Stdio::null())
            .output()
            .expect("run hermes")
    };
    let added = hermes(&[
        "cron",
        "add",
        "every 1d",
        "report",
        "--name",
        "report",
        "--script",
        "report.sh",
        "--no-agent",
        "--deliver",
        "discord:777",
    ]);
    let out = String::from_utf8_lossy(&added.stdout).to_string();
    let id = out
        .split_whitespace()
        .skip_while(|w| *w != "job:")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    assert!(!id.is_empty(), "no job id in: {out}");
    let start = Instant::now();
    let ran = hermes(&["cron", "run", &id]);
    let took = start.elapsed();
    stop.store(true, Ordering::SeqCst);
    let accepted = fake.join().unwrap_or_default();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let span = match (accepted.first(), accepted.last()) {
        (Some(first), Some(last)) if accepted.len() > 1 => *last - *first,
        _ => Duration::ZERO,
    };
    // A bucket of 5 per second lets N messages through in no less than
    // (ceil(N / 5) - 1) s from the first to the last.
    let floor = Duration::from_secs((accepted.len().div_ceil(5).saturating_sub(1)) as u64);
    println!(
        "[2] Discord pacing, bucket 5 per 1 s: {} messages, first to last {:.2} s \
         (the bucket's floor {:.0} s: {:.0} % of the allowed rate), {} × 429, \
         `cron run` took {:.1} s",
        accepted.len(),
        span.as_secs_f64(),
        floor.as_secs_f64(),
        100.0 * floor.as_secs_f64() / span.as_secs_f64().max(1e-9),
        limited.load(Ordering::SeqCst),
        took.as_secs_f64()
    );
}

fn main() {
    let measuring = std::env::args().any(|a| a == "--bench");
    let parts = std::env::var("PARTS")
        .ok()
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or(30);
    if measuring {
        render_and_split(200);
        discord_pacing(parts);
    } else {
        render_and_split(2);
        discord_pacing(7);
    }
}
