//! Every verb and flag of the `hermes` command line, defined once (clap derive).

mod man;

pub use man::write_man_page;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "hermes",
    version,
    about = "hermes-cron: scheduled tasks for the Hermes agent"
)]
pub struct Cli {
    /// Log more (repeat for even more); RUST_LOG also works.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Use the Hermes profile NAME (`<HERMES_HOME>/profiles/NAME`), as Python Hermes does;
    /// without it, `active_profile` in the Hermes root applies.
    #[arg(short, long, global = true, value_name = "NAME")]
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
    Cron {
        #[command(subcommand)]
        verb: Option<CronVerb>,
    },
    /// Without Python Hermes: the scheduler, as `hermes cron service` (`run` is the
    /// default). With Python Hermes installed, `hermes gateway` is its chat gateway and
    /// goes to it, like every verb but `cron` and `completions`.
    Gateway {
        #[command(subcommand)]
        action: Option<GatewayAction>,
    },
    /// Pause every scheduler of this home (on PostgreSQL: every host): due jobs are not
    /// claimed until `hermes resume`; running jobs and `hermes cron run` go on.
    Pause {
        /// Why, stored with the pause and shown by `hermes cron status`.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Lift the pause of `hermes pause`: jobs left due fire at the next pass.
    Resume,
    /// Print a shell completion script: `hermes completions bash > /etc/bash_completion.d/hermes`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff): `hermes man | gzip > hermes.1.gz`.
    Man,
}

#[derive(Debug, Subcommand)]
pub enum CronVerb {
    /// Create a job: `hermes cron add "every 2h" "summarize inbox"`.
    #[command(visible_alias = "create")]
    Add(AddArgs),
    /// List jobs (enabled ones; --all adds paused and completed).
    List {
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Change a job; "" clears a string field.
    Edit(EditArgs),
    /// Pause a job: it keeps its schedule but does not fire.
    Pause {
        job: String,
        #[arg(long)]
        reason: Option<String>,
    },
    /// Resume a paused job; its next run is computed from now. A one-shot can be
    /// re-armed instead, completed or not: --at TIME or --run-now.
    Resume {
        job: String,
        /// Re-arm a one-shot to run at this time (ISO-8601).
        #[arg(long, value_name = "TIME", conflicts_with = "run_now")]
        at: Option<String>,
        /// Re-arm a one-shot to run now.
        #[arg(long)]
        run_now: bool,
    },
    /// Remove a job and its output documents.
    #[command(visible_aliases = ["rm", "delete"])]
    Remove { job: String },
    /// Show the next fire times of a schedule without storing anything.
    Next(NextArgs),
    /// Run the scheduler until stopped (SIGTERM/SIGINT). Alias: `hermes gateway`.
    Daemon,
    /// Run one scheduler pass in this process and wait for the runs it starts.
    Tick,
    /// Run a job now, wait, and print the outcome; its schedule is not moved.
    Run { job: String },
    /// Is a scheduler running, and what is next?
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Run history from the ledger, newest first (alias: history).
    #[command(visible_alias = "history")]
    Runs {
        job: Option<String>,
        /// How many runs: 1 to 500, as Python Hermes clamps it.
        #[arg(long, default_value_t = 20)]
        limit: i64,
        #[arg(long)]
        json: bool,
    },
    /// Read-only health check; exits 1 when something needs attention.
    Doctor,
    /// Print the output document of one run (its id as `runs` shows it), from any host.
    Output { run: i64 },
    /// Serve the `cronjob` tool over the Model Context Protocol on stdin/stdout, for a
    /// chat agent's MCP client (docs/COMMANDS.md, "mcp").
    Mcp,
    /// Failure incidents: one per job and error, alerted once (`ack ID` silences one).
    Incidents {
        #[arg(long, value_enum)]
        state: Option<IncidentStateArg>,
        #[arg(long)]
        json: bool,
        #[arg(value_enum, default_value = "list")]
        action: IncidentAction,
        /// The incident to acknowledge (`ack`).
        id: Option<String>,
    },
    /// A job's notepad: keys and values kept across its runs and shown to its agent.
    Notepad {
        job: String,
        #[arg(value_enum, default_value = "list")]
        action: NotepadAction,
        key: Option<String>,
        value: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// The scheduler as a systemd user service named `hermes-cron`: `install`,
    /// `uninstall`, `start`, `stop`, `restart`, `status`, or `run` in the foreground.
    Service {
        #[command(subcommand)]
        action: GatewayAction,
    },
    /// The store behind the jobs: its status, and copies to and from jobs.json.
    Store {
        #[command(subcommand)]
        verb: StoreVerb,
    },
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
    Run,
    /// Is a scheduler running, and what is next (same as `hermes cron status`).
    Status,
    /// Write and enable a systemd user unit that runs the scheduler; without systemd,
    /// print the unit and where it belongs.
    Install,
    /// Stop, disable and remove the unit.
    Uninstall,
    /// Start the unit.
    Start,
    /// Stop the unit.
    Stop,
    /// Restart the unit.
    Restart,
}

/// `hermes cron store …`.
#[derive(Debug, Subcommand)]
pub enum StoreVerb {
    /// The backend (jobs.json or postgresql), its schema version and the live hosts.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Copy the jobs of a jobs.json into this store (every field kept; run again, it
    /// updates the same jobs).
    Import {
        /// The jobs.json to read (default: this home's `cron/jobs.json`).
        #[arg(long)]
        from: Option<std::path::PathBuf>,
    },
    /// Print this store's jobs as a jobs.json Python Hermes can read.
    Export,
}

/// Fields `add` and `edit` share. With `edit`, `""` clears a field.
#[derive(Debug, Args)]
pub struct JobFields {
    #[arg(long)]
    pub name: Option<String>,
    /// local, origin, telegram, telegram:CHAT[:THREAD], all, webhook:URL (comma list).
    #[arg(long)]
    pub deliver: Option<String>,
    /// How many runs: a number, "once" or "forever".
    #[arg(long)]
    pub repeat: Option<String>,
    /// A script under <HERMES_HOME>/scripts/ run before the agent.
    #[arg(long)]
    pub script: Option<String>,
    /// Absolute path of an existing directory the job works in.
    #[arg(long)]
    pub workdir: Option<String>,
    #[arg(long)]
    pub model: Option<String>,
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
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// When: "every 2h", "30m", "weekdays at 9am", "0 9 * * *", "2026-02-03T14:00"...
    pub schedule: String,
    /// What the agent should do.
    pub prompt: Option<String>,
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

#[derive(Debug, Args)]
pub struct EditArgs {
    pub job: String,
    #[arg(long)]
    pub schedule: Option<String>,
    #[arg(long)]
    pub prompt: Option<String>,
    #[command(flatten)]
    pub fields: JobFields,
    /// Replace the skills with these (repeatable).
    #[arg(long = "skill")]
    pub skills: Vec<String>,
    #[arg(long = "add-skill")]
    pub add_skills: Vec<String>,
    #[arg(long = "remove-skill")]
    pub remove_skills: Vec<String>,
    #[arg(long)]
    pub clear_skills: bool,
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
    pub schedule: String,
    /// Start after this instant (ISO-8601; default now).
    #[arg(long)]
    pub from: Option<String>,
    #[arg(long = "tz")]
    pub timezone: Option<String>,
    /// How many fire times to show.
    #[arg(short = 'n', default_value_t = 5)]
    pub count: usize,
    #[arg(long)]
    pub json: bool,
}
