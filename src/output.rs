//! Printing to stdout. A reader that goes away (`hermes cron list | head`) is not an
//! error worth a panic: the output simply stops.

use std::io::Write;

/// Writes `text` to stdout; a closed pipe ends the process quietly with success.
pub fn emit(text: &str) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: cannot write to stdout: {e}");
        std::process::exit(2);
    }
}

/// `println!` through [`emit`].
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::output::emit(&format!("{}\n", format_args!($($arg)*)))
    };
}
