//! The man page `hermes.1`, generated from the one clap definition of the command line:
//! clap_mangen's sections for `hermes`, then every command and verb with its usage, help
//! and options. It only writes roff; it never reads the home.

use std::io::{self, Write};

use clap::{Arg, Command, CommandFactory};
use roff::{bold, italic, roman, Roff};

use super::Cli;

/// Writes the whole page to `out`.
pub fn write_man_page(out: &mut dyn Write) -> io::Result<()> {
    let mut command = Cli::command();
    // Built, so that every argument knows whether it takes a value.
    command.build();
    let page = clap_mangen::Man::new(command.clone());
    page.render_title(out)?;
    page.render_name_section(out)?;
    page.render_synopsis_section(out)?;
    page.render_description_section(out)?;
    page.render_options_section(out)?;
    let mut commands = Roff::new();
    commands.control("SH", ["COMMANDS"]);
    for child in command.get_subcommands().filter(|c| shown_command(c)) {
        describe(&mut commands, "hermes", child);
    }
    commands.to_writer(out)?;
    page.render_version_section(out)
}

/// A verb (its usage line in bold, its help, its options), or a group of verbs
/// (`hermes cron`: a subsection, then each verb).
fn describe(roff: &mut Roff, parent: &str, command: &Command) {
    let name = format!("{parent} {}", command.get_name());
    let help = command
        .get_long_about()
        .or(command.get_about())
        .map(ToString::to_string)
        .unwrap_or_default();
    if command.has_subcommands() {
        roff.control("SS", [name.as_str()]).text([roman(help)]);
        for verb in command.get_subcommands().filter(|c| shown_command(c)) {
            describe(roff, &name, verb);
        }
        return;
    }
    let usage = command.clone().bin_name(&name).render_usage().to_string();
    let usage = usage.strip_prefix("Usage: ").unwrap_or(&usage).to_string();
    let aliases: Vec<&str> = command.get_visible_aliases().collect();
    let aliases = match aliases[..] {
        [] => String::new(),
        _ => format!(" (alias: {})", aliases.join(", ")),
    };
    roff.control("TP", [])
        .text([bold(usage)])
        .text([roman(format!("{help}{aliases}"))]);
    for arg in command.get_arguments().filter(|a| shown(a)) {
        roff.control("RS", [])
            .control("TP", [])
            .text(arg_name(arg))
            .text([roman(
                arg.get_help().map(ToString::to_string).unwrap_or_default(),
            )])
            .control("RE", []);
    }
}

/// Not clap's own `help` verb, not a hidden one.
fn shown_command(command: &Command) -> bool {
    !command.is_hide_set() && command.get_name() != "help"
}

/// Options users pass: not `--help`, not hidden, not the global ones shown at the top.
fn shown(arg: &Arg) -> bool {
    !arg.is_hide_set() && !arg.is_global_set() && arg.get_id() != "help"
}

/// `--name <NAME>`, `-n <COUNT>`, or a positional `<SCHEDULE>`.
fn arg_name(arg: &Arg) -> Vec<roff::Inline> {
    let value = arg
        .get_value_names()
        .and_then(|names| names.first())
        .map(|name| name.to_string())
        .unwrap_or_else(|| arg.get_id().to_string().to_uppercase());
    let takes_value = arg.get_num_args().is_some_and(|n| n.takes_values());
    match (arg.get_long(), arg.get_short()) {
        (None, None) => vec![italic(format!("<{value}>"))],
        (long, short) => {
            let mut names: Vec<String> = short.map(|s| format!("-{s}")).into_iter().collect();
            names.extend(long.map(|l| format!("--{l}")));
            let mut inlines = vec![bold(names.join(", "))];
            if takes_value {
                inlines.push(roman(" "));
                inlines.push(italic(format!("<{value}>")));
            }
            inlines
        }
    }
}
