//! Printing to stdout. A reader that goes away (`hermes cron list | head`) is not an
//! error worth a panic: the output simply stops.

use std::io::Write;

/// A failed write to stdout: a closed pipe ends the process quietly with success.
fn stdout_failed(e: std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("error: cannot write to stdout: {e}");
    std::process::exit(2);
}

/// Writes `text` to stdout.
pub fn emit(text: &str) {
    emit_bytes(text.as_bytes());
}

/// Writes `bytes` (UTF-8 text, e.g. JSON built in memory) to stdout.
pub fn emit_bytes(bytes: &[u8]) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        stdout_failed(e);
    }
}

/// `println!` through [`emit`].
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::stdout::emit(&format!("{}\n", format_args!($($arg)*)))
    };
}
