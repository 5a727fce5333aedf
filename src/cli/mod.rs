//! Every verb and flag of the `hermes` command line, defined once (clap derive).

#[cfg(test)]
mod field_flags;
mod man;

pub use man::write_man_page;

use clap::{Args, Parser, Subcommand};

/// The heading the global options stand under, apart from each verb's own.
const GLOBAL: &str = "Global options";

#[derive(Debug, Parser)]
#[command(
    name = "hermes",
    version,
    about = "hermes-cron: scheduled tasks for the Hermes agent",
    after_help = "This program runs `hermes cron …`; with Python Hermes installed, every other verb \
(bare `hermes`, `chat`, `gateway`, `setup`…) goes to Python Hermes' own `hermes`.\n\n\
Example:\n  hermes cron add \"every 2h\" \"summarize inbox\"\n  hermes cron list"
)]
pub struct Cli {
    /// Log more (repeat for even more); RUST_LOG also works.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, help_heading = GLOBAL)]
    pub verbose: u8,
    /// Use the Hermes profile NAME (`<HERMES_HOME>/profiles/NAME`), as Python Hermes does;
    /// without it, `active_profile` in the Hermes root applies.
    #[arg(short, long, global = true, value_name = "NAME", help_heading = GLOBAL)]
    pub profile: Option<String>,
    #[command(subcommand)]
    pub command: Command,
}

// Parsed once per process: the size difference between variants does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Scheduled jobs: add, list, edit, pause, resume, remove, next. Bare `hermes cron`
    /// lists them, as Python Hermes does.
    #[command(
        after_help = "Example:\n  hermes cron add \"weekdays at 9am\" \"daily report\" --deliver telegram\n  hermes cron"
    )]
    Cron {
        #[command(subcommand)]
        verb: Option<CronVerb>,
    },
    /// Without Python Hermes: the scheduler, as `hermes cron service` (`run` is the
    /// default). With Python Hermes installed, `hermes gateway` is its chat gateway and
    /// goes to it, like every verb but `cron` and `completions`.
    #[command(after_help = "Example (without Python Hermes):\n  hermes gateway install")]
    Gateway {
        #[command(subcommand)]
        action: Option<GatewayAction>,
    },
    /// Pause every scheduler of this home (on PostgreSQL: every host): due jobs are not
    /// claimed until `hermes resume`; running jobs and `hermes cron run` go on.
    #[command(after_help = "Example:\n  hermes pause --reason \"provider outage\"")]
    Pause {
        /// Why, stored with the pause and shown by `hermes cron status`.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Lift the pause of `hermes pause`: jobs left due fire at the next pass.
    #[command(after_help = "Example:\n  hermes resume")]
    Resume,
    /// Print a shell completion script, generated from this command line.
    #[command(
        after_help = "Example:\n  hermes completions bash > ~/.local/share/bash-completion/completions/hermes"
    )]
    Completions {
        /// The shell: bash, zsh, fish, elvish or powershell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), generated from this command line.
    #[command(after_help = "Example:\n  hermes man | gzip > hermes.1.gz")]
    Man,
}

#[derive(Debug, Subcommand)]
pub enum CronVerb {
    /// Create a job.
    #[command(
        visible_alias = "create",
        after_help = "Examples:\n  hermes cron add \"every 2h\" \"summarize inbox\"\n  \
hermes cron add \"weekdays at 9am\" \"daily report\" --deliver telegram --tz Europe/Berlin\n  \
hermes cron add \"in 30m\" \"remind me to stretch\"\n  \
hermes cron add \"0 * * * *\" --script check.sh --no-agent --deliver discord"
    )]
    Add(AddArgs),
    /// List jobs: scheduled, paused and failed ones (--all adds completed ones).
    #[command(after_help = "Examples:\n  hermes cron list --all --json\n  \
hermes cron list --limit 50 --offset 100     (one page of a large store, with the count)")]
    List {
        /// Include completed jobs.
        #[arg(long)]
        all: bool,
        /// Print the jobs as JSON.
        #[arg(long)]
        json: bool,
        /// Show at most N jobs (one page) and how many there are in all.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000))]
        limit: Option<u64>,
        /// Skip the first N jobs (with --limit, default 50: the next pages).
        #[arg(long, value_name = "N")]
        offset: Option<u64>,
    },
    /// Change a job; "" clears a string field.
    #[command(
        after_help = "Examples:\n  hermes cron edit standup --schedule \"0 10 * * 1-5\" --add-skill jira\n  \
hermes cron edit standup --model \"\"     (clears the model)"
    )]
    Edit(EditArgs),
    /// Pause a job: it keeps its schedule but does not fire.
    #[command(after_help = "Example:\n  hermes cron pause standup --reason \"on holiday\"")]
    Pause {
        /// The job: its id, or its name if no other job has it.
        job: String,
        /// Why, shown by `list`.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Resume a paused job; its next run is computed from now. A one-shot can be
    /// re-armed instead, completed or not: --at TIME or --run-now.
    #[command(
        after_help = "Examples:\n  hermes cron resume standup\n  hermes cron resume reminder --at 2026-12-24T18:00"
    )]
    Resume {
        /// The job: its id, or its name if no other job has it.
        job: String,
        /// Re-arm a one-shot to run at this time (ISO-8601).
        #[arg(long, value_name = "TIME", conflicts_with = "run_now")]
        at: Option<String>,
        /// Re-arm a one-shot to run now.
        #[arg(long)]
        run_now: bool,
    },
    /// Remove a job and its output documents.
    #[command(
        visible_aliases = ["rm", "delete"],
        after_help = "Example:\n  hermes cron remove standup"
    )]
    Remove {
        /// The job: its id, or its name if no other job has it.
        job: String,
    },
    /// Show the next fire times of a schedule without storing anything.
    #[command(
        after_help = "Example:\n  hermes cron next \"30 2 * * *\" --tz America/New_York --from 2026-03-07T12:00:00-05:00 -n 2"
    )]
    Next(NextArgs),
    /// Run each past occurrence of a job's schedule in a window, oldest first, once.
    #[command(
        after_help = "Examples:\n  hermes cron backfill daily-report --from 2026-03-01 --to 2026-03-07T23:59 --dry-run\n  \
hermes cron backfill daily-report --from 2026-03-01T00:00:00Z --to 2026-03-07T23:59:59Z"
    )]
    Backfill {
        /// The job: its id, or its name if no other job has it.
        job: String,
        /// The window's start (ISO-8601; without an offset, in the job's zone).
        #[arg(long, value_name = "ISO")]
        from: String,
        /// The window's end, included (ISO-8601), not after now.
        #[arg(long, value_name = "ISO")]
        to: String,
        /// List the occurrences that would run, and run nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Run the scheduler until stopped (SIGTERM/SIGINT).
    #[command(
        after_help = "Example:\n  hermes cron daemon\n  hermes cron service install     (as a systemd user service)"
    )]
    Daemon,
    /// Run one scheduler pass in this process and wait for the runs it starts.
    #[command(after_help = "Example:\n  hermes cron tick")]
    Tick,
    /// Run a job now, wait, and print the outcome; its schedule is not moved.
    #[command(after_help = "Example:\n  hermes cron run standup")]
    Run {
        /// The job: its id, or its name if no other job has it.
        job: String,
    },
    /// Stop a job's running run (or one run, by its id) within 5 seconds, with its tools
    /// and their processes, on this host or another on a shared store; it is recorded
    /// `cancelled`, sends nothing, and the schedule is not moved.
    #[command(
        visible_alias = "stop",
        after_help = "Examples:\n  hermes cron cancel standup\n  hermes cron cancel 42     (run 42, as `hermes cron runs` shows it)"
    )]
    Cancel {
        /// The job (its id, or its name if no other job has it), or a run id.
        target: String,
    },
    /// Run a past run again now, with the prompt (a per-run prompt included) and model
    /// it used; recorded with source `replay` and `replay_of` set. Waits and prints the
    /// outcome, as `run` does.
    #[command(
        after_help = "Example:\n  hermes cron replay 42     (run 42, as `hermes cron runs` shows it)"
    )]
    Replay {
        /// The run's id, the first column of `hermes cron runs`.
        run: i64,
    },
    /// Is a scheduler running, and what is next?
    #[command(after_help = "Example:\n  hermes cron status --json")]
    Status {
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run history from the ledger, newest first: each run's id, status and delivery.
    #[command(
        visible_alias = "history",
        after_help = "Examples:\n  hermes cron runs\n  hermes cron runs standup --limit 5 --json"
    )]
    Runs {
        /// Only this job's runs (its id or name; a removed job's id still works).
        job: Option<String>,
        /// How many runs: 1 to 500, as Python Hermes clamps it.
        #[arg(long, default_value_t = 20)]
        limit: i64,
        /// Print the runs as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Read-only health check; exits 1 when something needs attention.
    #[command(after_help = "Example:\n  hermes cron doctor")]
    Doctor,
    /// What the runs of a window spent, per job or per model (tokens and US dollars).
    #[command(
        after_help = "Examples:\n  hermes cron cost --since 7d\n  hermes cron cost --by model --json"
    )]
    Cost {
        /// The window: a duration back from now (7d, 12h), a date or an ISO-8601 instant.
        #[arg(long, default_value = "30d")]
        since: String,
        /// One row per job or per model.
        #[arg(long, value_enum, default_value = "job")]
        by: CostBy,
        /// Print the rows as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Deliver a finished run's stored output again, with no model request: to its job's
    /// targets, or to the one --to names. The outcome is recorded on the run.
    #[command(
        after_help = "Examples:\n  hermes cron redeliver 42\n  hermes cron redeliver 42 --to telegram:-1001234567890"
    )]
    Redeliver {
        /// The run's id, the first column of `hermes cron runs`.
        run: i64,
        /// Send it here instead: a deliver value (telegram:CHAT, webhook:URL, …).
        #[arg(long, value_name = "TARGET")]
        to: Option<String>,
    },
    /// Print the output document of one run (its id as `runs` shows it), from any host.
    #[command(after_help = "Example:\n  hermes cron output 42")]
    Output {
        /// The run's id, the first column of `hermes cron runs`.
        run: i64,
    },
    /// Serve the `cronjob` tool over the Model Context Protocol on stdin/stdout, for a
    /// chat agent's MCP client (docs/COMMANDS.md, "mcp").
    #[command(
        after_help = "Examples:\n  hermes cron mcp     (an MCP client starts it and speaks on its stdin/stdout)\n  \
                      {\"command\": \"hermes\", \"args\": [\"cron\", \"mcp\"]}     (that client's server entry)"
    )]
    Mcp,
    /// Failure incidents: one per job and error, alerted once (`ack ID` silences one).
    #[command(
        after_help = "Examples:\n  hermes cron incidents --state alerted\n  hermes cron incidents ack 3f9a01_5c2e8d1f0a7b"
    )]
    Incidents {
        /// Only incidents in this state.
        #[arg(long, value_enum)]
        state: Option<IncidentStateArg>,
        /// Print the incidents as JSON.
        #[arg(long)]
        json: bool,
        /// `list` the incidents, or `ack` one (it stays silent until its error changes).
        #[arg(value_enum, default_value = "list")]
        action: IncidentAction,
        /// The incident to acknowledge (`ack`).
        id: Option<String>,
    },
    /// A job's notepad: keys and values kept across its runs and shown to its agent.
    #[command(
        after_help = "Examples:\n  hermes cron notepad standup set last_ticket JIRA-42\n  hermes cron notepad standup list"
    )]
    Notepad {
        /// The job whose notepad it is (its id or name).
        job: String,
        /// `list` the notes, `get KEY`, `set KEY VALUE` or `delete KEY`.
        #[arg(value_enum, default_value = "list")]
        action: NotepadAction,
        /// The note's key (up to 128 characters).
        key: Option<String>,
        /// The note's value (`set`; up to 16 KiB).
        value: Option<String>,
        /// Print the notes as JSON.
        #[arg(long)]
        json: bool,
    },
    /// The scheduler as a systemd user service named `hermes-cron`: `install`,
    /// `uninstall`, `start`, `stop`, `restart`, `status`, or `run` in the foreground.
    #[command(after_help = "Example:\n  hermes cron service install")]
    Service {
        #[command(subcommand)]
        action: GatewayAction,
    },
    /// The store behind the jobs: its status, and copies to and from jobs.json.
    #[command(after_help = "Example:\n  hermes cron store status")]
    Store {
        #[command(subcommand)]
        verb: StoreVerb,
    },
    /// How a job's runs are confined (docs/SAFETY.md, "Sandbox").
    #[command(after_help = "Example:\n  hermes cron sandbox explain nightly-report --json")]
    Sandbox {
        #[command(subcommand)]
        verb: SandboxVerb,
    },
}

/// `hermes cron sandbox` verbs.
#[derive(Debug, Subcommand)]
pub enum SandboxVerb {
    /// The effective policy of a job's runs: level, writable and hidden paths, network,
    /// limits, and what the kernel supports.
    #[command(after_help = "Example:\n  hermes cron sandbox explain nightly-report")]
    Explain {
        /// The job's id or name.
        job: String,
        /// Print the policy as JSON.
        #[arg(long)]
        json: bool,
    },
}

/// How `hermes cron cost` groups the spend.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum CostBy {
    Job,
    Model,
}

/// What `hermes cron incidents` does.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum IncidentAction {
    List,
    Ack,
}

/// An incident state, as `--state` takes it.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum IncidentStateArg {
    Detected,
    Alerted,
    Resolved,
    Closed,
}

/// What `hermes cron notepad JOB` does.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum NotepadAction {
    List,
    Get,
    Set,
    Delete,
}

/// `hermes cron service …` (and `hermes gateway …` without Python Hermes).
#[derive(Debug, Clone, Copy, Subcommand)]
pub enum GatewayAction {
    /// Run the scheduler in the foreground until SIGTERM/SIGINT.
    #[command(after_help = "Example:\n  hermes cron service run")]
    Run,
    /// Is a scheduler running, and what is next (same as `hermes cron status`).
    #[command(after_help = "Example:\n  hermes cron service status")]
    Status,
    /// Write and enable a systemd user unit that runs the scheduler; without systemd,
    /// print the unit and where it belongs.
    #[command(after_help = "Example:\n  hermes cron service install")]
    Install,
    /// Stop, disable and remove the unit.
    #[command(after_help = "Example:\n  hermes cron service uninstall")]
    Uninstall,
    /// Start the unit.
    #[command(after_help = "Example:\n  hermes cron service start")]
    Start,
    /// Stop the unit.
    #[command(after_help = "Example:\n  hermes cron service stop")]
    Stop,
    /// Restart the unit.
    #[command(after_help = "Example:\n  hermes cron service restart")]
    Restart,
}

/// `hermes cron store …`.
#[derive(Debug, Subcommand)]
pub enum StoreVerb {
    /// The backend (jobs.json or postgresql), its schema version and the live hosts.
    #[command(after_help = "Example:\n  hermes cron store status --json")]
    Status {
        /// Print the status as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Copy the jobs of a jobs.json into this store (every field kept; run again, it
    /// updates the same jobs).
    #[command(
        after_help = "Example:\n  HERMES_CRON_STORE=postgresql://cron@db/cron hermes cron store import --from ~/.hermes/cron/jobs.json"
    )]
    Import {
        /// The jobs.json to read (default: this home's `cron/jobs.json`).
        #[arg(long)]
        from: Option<std::path::PathBuf>,
    },
    /// Print this store's jobs as a jobs.json Python Hermes can read.
    #[command(after_help = "Example:\n  hermes cron store export > jobs.json")]
    Export,
}

/// Fields `add` and `edit` share. With `edit`, `""` clears a field.
#[derive(Debug, Args)]
pub struct JobFields {
    /// A name to refer to the job by (default: the start of the prompt).
    #[arg(long)]
    pub name: Option<String>,
    /// local, origin, telegram, telegram:CHAT[:THREAD], all, webhook:URL (comma list).
    #[arg(long)]
    pub deliver: Option<String>,
    /// How many runs: a number, "once" or "forever" (0 or a negative number: forever).
    #[arg(long, allow_negative_numbers = true)]
    pub repeat: Option<String>,
    /// A script under <HERMES_HOME>/scripts/ run before the agent.
    #[arg(long)]
    pub script: Option<String>,
    /// Absolute path of an existing directory the job works in.
    #[arg(long)]
    pub workdir: Option<String>,
    /// How confined the job's runs are: strict, standard or off (default: cron.sandbox,
    /// else standard; with edit, "" returns to the default).
    #[arg(long, value_name = "LEVEL")]
    pub sandbox: Option<String>,
    /// The model this job's agent calls, instead of the configured one.
    #[arg(long)]
    pub model: Option<String>,
    /// The provider of --model (openrouter, openai, anthropic, custom, …).
    #[arg(long)]
    pub provider: Option<String>,
    /// IANA time zone for this job's cron and day/time schedules.
    #[arg(long = "tz")]
    pub timezone: Option<String>,
    /// Where failure notices go instead of --deliver (same values; `local` mutes them).
    #[arg(long)]
    pub failure_deliver: Option<String>,
    /// Monitor mode: a script under <HERMES_HOME>/scripts/ whose output, when it changes,
    /// wakes the agent.
    #[arg(long)]
    pub monitor_script: Option<String>,
    /// Monitor mode: an http(s) URL whose content, when it changes, wakes the agent.
    #[arg(long)]
    pub monitor_url: Option<String>,
    /// none, minimal, low, medium, high, xhigh, max or ultra (default: the configured one).
    #[arg(long)]
    pub reasoning_effort: Option<String>,
    /// The Python (an absolute or ~ path) a .py script or monitor script runs under.
    #[arg(long)]
    pub interpreter: Option<String>,
    /// Jobs (ids or names) whose newest output each run is given as context: repeat the
    /// flag or give a comma list (with edit, it replaces them, "" removes them;
    /// continuity is kept).
    #[arg(long, value_name = "JOB", value_delimiter = ',')]
    pub context_from: Option<Vec<String>>,
    /// The only toolsets or tools the job's agent gets, a comma list (terminal, file,
    /// web, skills, todo, code_execution, an MCP server's name…); none for no tool at
    /// all (with edit, "" gives every tool again).
    #[arg(long, value_name = "LIST")]
    pub toolsets: Option<String>,
    /// Run each time a run of job JOB (id or name) ends with the --on outcome; with
    /// edit, "" removes the chain.
    #[arg(long, value_name = "JOB")]
    pub after: Option<String>,
    /// Which outcomes of the --after job start this one: success (default), failure or
    /// always.
    #[arg(long = "on", value_name = "OUTCOME")]
    pub after_on: Option<String>,
    /// When an occurrence comes due while the job still runs: skip it (the default),
    /// queue one to run right after, or replace the running run (with edit, "" clears).
    #[arg(long, value_name = "skip|queue|replace")]
    pub overlap: Option<String>,
    /// At most N model requests per run (with edit, 0 or "" clears a cap).
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub max_turns: Option<String>,
    /// At most this long per run, e.g. 90s or 10m: then the run is stopped.
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub max_runtime: Option<String>,
    /// At most N prompt plus completion tokens per run.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub max_tokens: Option<String>,
    /// At most this many US dollars per run, priced by the run's model.
    #[arg(long, value_name = "USD", allow_hyphen_values = true)]
    pub max_cost: Option<String>,
    /// No run before this instant (ISO-8601; without an offset, in the job's zone): the
    /// first run is the first occurrence at or after it.
    #[arg(long, value_name = "ISO")]
    pub start_at: Option<String>,
    /// No run after this instant (ISO-8601): then the job completes.
    #[arg(long, value_name = "ISO")]
    pub until: Option<String>,
    /// Move every run later by a fixed offset up to this long, derived from the job id
    /// (e.g. 5m; 0 for none), so jobs on one schedule do not start together.
    #[arg(long, value_name = "DURATION")]
    pub jitter: Option<String>,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// When: "every 2h", "30m", "weekdays at 9am", "0 9 * * *", "2026-02-03T14:00"...
    /// (or --schedule).
    #[arg(value_name = "SCHEDULE")]
    pub schedule: Option<String>,
    /// What the agent should do (or --prompt).
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// The schedule as a flag, as `edit` takes it (`create --name N --schedule S --prompt P`).
    #[arg(long = "schedule", id = "schedule_flag", value_name = "SCHEDULE")]
    schedule_flag: Option<String>,
    /// The prompt as a flag, as `edit` takes it.
    #[arg(long = "prompt", id = "prompt_flag", value_name = "PROMPT")]
    prompt_flag: Option<String>,
    #[command(flatten)]
    pub fields: JobFields,
    /// A skill to load before the prompt (repeatable, kept in order).
    #[arg(long = "skill")]
    pub skills: Vec<String>,
    /// Deliver the script's output; start no agent.
    #[arg(long)]
    pub no_agent: bool,
    /// Create the job paused.
    #[arg(long)]
    pub paused: bool,
    /// Why it is created paused (needs --paused).
    #[arg(long)]
    pub paused_reason: Option<String>,
    /// Pin the configured model and its provider onto the job (ignored with --model).
    #[arg(long)]
    pub pin: bool,
    /// Each run sees the job's own previous output.
    #[arg(long)]
    pub continuity: bool,
    /// The chat the job came from, PLATFORM:CHAT[:THREAD] (for integrations).
    #[arg(long)]
    pub origin: Option<String>,
}

impl AddArgs {
    /// Settles where the schedule and the prompt were given: as the two arguments, as
    /// `--schedule`/`--prompt`, or mixed (`add --schedule S PROMPT`). Afterwards
    /// `schedule` is set and the flags are empty. Missing or given twice is a usage error.
    fn settle(&mut self) -> Result<(), (clap::error::ErrorKind, &'static str)> {
        use clap::error::ErrorKind;
        let words: Vec<String> = [self.schedule.take(), self.prompt.take()]
            .into_iter()
            .flatten()
            .collect();
        let (schedule, prompt) = match (self.schedule_flag.take(), self.prompt_flag.take()) {
            (Some(schedule), Some(prompt)) if words.is_empty() => (schedule, Some(prompt)),
            (Some(schedule), None) if words.len() <= 1 => (schedule, words.into_iter().next()),
            (None, prompt) if words.len() == 1 || (words.len() == 2 && prompt.is_none()) => {
                let mut words = words.into_iter();
                (words.next().unwrap_or_default(), prompt.or(words.next()))
            }
            (None, _) if words.is_empty() => {
                return Err((
                    ErrorKind::MissingRequiredArgument,
                    "a schedule is needed: `hermes cron add SCHEDULE PROMPT` or `--schedule SCHEDULE --prompt PROMPT`",
                ))
            }
            _ => {
                return Err((
                    ErrorKind::ArgumentConflict,
                    "the schedule or the prompt is given twice (as an argument and as --schedule/--prompt): give each once",
                ))
            }
        };
        self.schedule = Some(schedule);
        self.prompt = prompt;
        Ok(())
    }
}

/// Parses the command line: clap's parse, then what clap's derive cannot say alone (where
/// `add`'s schedule and prompt were given). A usage error comes back as clap's own, with
/// the verb's usage line and exit code 2.
pub fn parse_from(args: Vec<std::ffi::OsString>) -> Result<Cli, clap::Error> {
    let mut cli = Cli::try_parse_from(args)?;
    if let Command::Cron {
        verb: Some(CronVerb::Add(add)),
    } = &mut cli.command
    {
        if let Err((kind, message)) = add.settle() {
            let mut command = <Cli as clap::CommandFactory>::command();
            command.build();
            let verb = command
                .find_subcommand_mut("cron")
                .and_then(|cron| cron.find_subcommand_mut("add"));
            return Err(match verb {
                Some(verb) => verb.error(kind, message),
                None => command.error(kind, message),
            });
        }
    }
    Ok(cli)
}

#[derive(Debug, Args)]
pub struct EditArgs {
    /// The job: its id, or its name if no other job has it.
    pub job: String,
    /// A new schedule (same forms as `add`); the next run is recomputed from now.
    #[arg(long)]
    pub schedule: Option<String>,
    /// A new prompt.
    #[arg(long)]
    pub prompt: Option<String>,
    #[command(flatten)]
    pub fields: JobFields,
    /// Replace the skills with these (repeatable).
    #[arg(long = "skill")]
    pub skills: Vec<String>,
    /// Add a skill after the job's others (repeatable).
    #[arg(long = "add-skill")]
    pub add_skills: Vec<String>,
    /// Remove a skill (repeatable).
    #[arg(long = "remove-skill")]
    pub remove_skills: Vec<String>,
    /// Remove every skill.
    #[arg(long)]
    pub clear_skills: bool,
    /// Deliver the script's output; start no agent (needs a script).
    #[arg(long, conflicts_with = "agent")]
    pub no_agent: bool,
    /// Start the agent again after --no-agent.
    #[arg(long)]
    pub agent: bool,
    /// Pin the configured model and its provider onto the job (unless it has a model).
    #[arg(long, conflicts_with = "unpin")]
    pub pin: bool,
    /// Clear the job's model and provider: it follows the configuration again.
    #[arg(long)]
    pub unpin: bool,
    /// Each run sees the job's own previous output.
    #[arg(long, conflicts_with = "no_continuity")]
    pub continuity: bool,
    /// Turn continuity off (other context_from jobs are kept).
    #[arg(long)]
    pub no_continuity: bool,
}

#[derive(Debug, Args)]
pub struct NextArgs {
    /// The schedule, as `add` takes it.
    pub schedule: String,
    /// Start after this instant (ISO-8601; default now).
    #[arg(long)]
    pub from: Option<String>,
    /// IANA time zone to read the schedule in (default: the configured one).
    #[arg(long = "tz")]
    pub timezone: Option<String>,
    /// How many fire times to show.
    #[arg(short = 'n', default_value_t = 5)]
    pub count: usize,
    /// Print the stored schedule and the fires as JSON.
    #[arg(long)]
    pub json: bool,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// Every verb, with its path from `hermes`.
    fn verbs(command: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
        for sub in command.get_subcommands() {
            let path = format!("{path} {}", sub.get_name());
            out.push((path.clone(), sub.clone()));
            verbs(sub, &path, out);
        }
    }

    #[test]
    fn every_verb_has_an_example_and_every_argument_a_description() {
        let mut all = Vec::new();
        verbs(&Cli::command(), "hermes", &mut all);
        assert!(all.len() > 30, "{}", all.len());
        for (path, verb) in all {
            let example = verb
                .get_after_help()
                .map(|h| h.to_string())
                .unwrap_or_default();
            assert!(example.starts_with("Example"), "{path} has no example");
            // An example is a command line running the verb (`hermes gateway run` shares
            // its examples with `hermes cron service run`), not only a description.
            let name = path.rsplit(' ').next().unwrap_or_default();
            assert!(
                example.lines().skip(1).any(|line| line.contains("hermes ")
                    && line.split_whitespace().any(|word| word == name)),
                "{path}: no example runs `{path}`"
            );
            for arg in verb.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                assert!(
                    arg.get_help().is_some(),
                    "{path}: the argument {id} has no description"
                );
            }
        }
    }
}
