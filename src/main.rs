//! `hermes`: parse the command line, dispatch to one function per verb, and turn errors
//! into a one-line message and an exit code in one place.

#[macro_use]
mod stdout;
mod api;
mod cli;
mod clock;
mod commands;
mod global_pause;
mod hermes_runner;
mod home;
mod job_service;
mod mcp_server;
mod monitor;
mod preflight;
mod python_cli;
mod readiness;
mod run_report;
mod scheduler;
mod wiring;

// The workspace's crates under the paths the binary has always used
// (`crate::config::Config`, `crate::redact::Redactor`, `crate::delivery::…`,
// `crate::runner::RunEnv`, `crate::sandbox::Policy`, `crate::agent::run_agent`).
use ::agent;
use ::delivery;
use ::runner;
use foundation::{config, environment, logged, outbound, redact};
use runner::{process, sandbox, script, world};

use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use cli::{Cli, Command};

fn main() -> ExitCode {
    // The sandbox's trampoline runs before anything else (no runtime, no threads).
    let raw: Vec<String> = std::env::args().collect();
    if raw.get(1).map(String::as_str) == Some(sandbox::EXEC_VERB) {
        let code = sandbox::exec::main(&raw[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let args = match python_cli::route(std::env::args_os().collect()) {
        python_cli::Route::Here(args) => args,
        python_cli::Route::Python(cli) => {
            eprintln!(
                "error: {}",
                python_cli::forward(&cli, &std::env::args_os().collect::<Vec<_>>())
            );
            return ExitCode::from(1);
        }
        python_cli::Route::Missing(verb) => {
            eprintln!("error: {}", python_cli::missing(&verb));
            return ExitCode::from(1);
        }
    };
    let cli = match cli::parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // 2 for a usage error (clap's and argparse's convention), 0 for --help.
            let code = u8::try_from(e.exit_code()).unwrap_or(2);
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Command::Cron { verb } => commands::run_cron(
            verb.unwrap_or(cli::CronVerb::List {
                all: false,
                json: false,
                limit: None,
                offset: None,
            }),
            cli.verbose,
            cli.profile.as_deref(),
        ),
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut command, "hermes", &mut std::io::stdout());
            Ok(())
        }
        Command::Man => {
            // A closed pipe (`hermes man | head`) is not an error worth a message.
            let _ = cli::write_man_page(&mut std::io::stdout());
            Ok(())
        }
        Command::Pause { reason } => commands::pause(reason, cli.verbose, cli.profile.as_deref()),
        Command::Resume => commands::resume(cli.verbose, cli.profile.as_deref()),
        Command::Gateway { action } => commands::gateway(
            action.unwrap_or(cli::GatewayAction::Run),
            cli.verbose,
            cli.profile.as_deref(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.code)
        }
    }
}
