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
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        stdout_failed(e);
    }
}

/// Streams a JSON value and a newline to stdout without building the text in memory.
pub fn emit_json(value: &serde_json::Value) {
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let written = serde_json::to_writer(&mut out, value)
        .map_err(std::io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    if let Err(e) = written {
        stdout_failed(e);
    }
}

/// `println!` through [`emit`].
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::emit(&format!("{}\n", format_args!($($arg)*)))
    };
}
