//! Every job field users set has its flag on `add` and `edit`, as the field table
//! ([`jobs::field_table::FIELDS`]) names it, or says why it has none.

use clap::CommandFactory;
use jobs::field_table::{Set, FIELDS};

use super::Cli;

/// The long flags of `hermes cron VERB`.
fn flags(verb: &str) -> Vec<String> {
    let mut command = Cli::command();
    command.build();
    let verb = command
        .find_subcommand("cron")
        .and_then(|cron| cron.find_subcommand(verb))
        .unwrap_or_else(|| panic!("hermes cron {verb} exists"));
    verb.get_arguments()
        .filter_map(|arg| arg.get_long())
        .map(str::to_string)
        .collect()
}

#[test]
fn every_field_users_set_has_its_flag_on_add_and_edit() {
    let (add, edit) = (flags("add"), flags("edit"));
    let mut missing = Vec::new();
    for field in FIELDS {
        match field.set {
            Set::Flag(flag) => {
                for (verb, flags) in [("add", &add), ("edit", &edit)] {
                    if !flags.iter().any(|f| f == flag) {
                        missing.push(format!("{verb} --{flag} ({})", field.key));
                    }
                }
            }
            Set::AddFlag(flag, _) if !add.iter().any(|f| f == flag) => {
                missing.push(format!("add --{flag} ({})", field.key));
            }
            Set::AddFlag(..) | Set::NoFlag(_) | Set::Internal => {}
        }
    }
    assert!(missing.is_empty(), "no such flags: {missing:?}");
}

/// The flags that set a field are the table's: a flag of `add`'s or `edit`'s shared
/// field set ([`super::JobFields`]) that names no field must be one of the few that
/// change fields another way.
#[test]
fn every_shared_field_flag_sets_a_field_of_the_table() {
    let named: Vec<&str> = FIELDS
        .iter()
        .filter_map(|field| match field.set {
            Set::Flag(flag) | Set::AddFlag(flag, _) => Some(flag),
            _ => None,
        })
        .collect();
    // `--on` is the outcome inside `after`.
    let beside = ["on"];
    let job_fields = <super::JobFields as clap::Args>::augment_args(clap::Command::new("fields"));
    assert!(job_fields
        .get_arguments()
        .any(|arg| arg.get_long() == Some("tz")));
    let stray: Vec<&str> = job_fields
        .get_arguments()
        .filter_map(|arg| arg.get_long())
        .filter(|flag| !named.contains(flag) && !beside.contains(flag))
        .collect();
    assert!(
        stray.is_empty(),
        "flags with no field in the table: {stray:?}"
    );
}
