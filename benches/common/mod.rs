//! What the whole-process bench binaries share: finding the release `hermes` binary and
//! printing figures. (A folder, not `benches/common.rs`, so cargo does not take it for a
//! bench target of its own.)

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The `hermes` binary: the one cargo built for this bench (`CARGO_BIN_EXE_hermes`, the
/// release profile under `cargo bench`), else `target/release/hermes`, built on demand.
pub fn hermes_binary() -> PathBuf {
    if let Some(path) = option_env!("CARGO_BIN_EXE_hermes").map(PathBuf::from) {
        if path.is_file() {
            return path;
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = root.join("target/release/hermes");
    if !path.is_file() {
        eprintln!("bench: building the release binary (cargo build --release)");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
        let status = Command::new(cargo)
            .args(["build", "--release", "--bin", "hermes"])
            .current_dir(root)
            .status();
        if !status.is_ok_and(|s| s.success()) || !path.is_file() {
            eprintln!(
                "bench: no hermes binary at {}; run `cargo build --release` first",
                path.display()
            );
            std::process::exit(2);
        }
    }
    path
}

/// `10000` → `10,000`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The middle of sorted `times` (the mean of the two middle ones for an even count).
pub fn median(sorted: &[Duration]) -> Duration {
    let mid = sorted.len() / 2;
    if sorted.len().is_multiple_of(2) {
        (sorted[mid - 1] + sorted[mid]) / 2
    } else {
        sorted[mid]
    }
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
