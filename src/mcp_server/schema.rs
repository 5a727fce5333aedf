//! The one tool this server offers, `cronjob`: its description and its JSON Schema.
//! The schema is written by hand and stays flat — typed properties and one `enum`, never
//! `anyOf`, `oneOf`, `allOf` or `$ref` — because several model providers refuse tool
//! schemas that use them.

use std::sync::Arc;

use rmcp::model::{Tool, ToolAnnotations};
use serde_json::{json, Map, Value};

use jobs::Platform;

pub const TOOL_NAME: &str = "cronjob";

/// The actions, in the order the description lists them.
pub const ACTIONS: [&str; 9] = [
    "create",
    "list",
    "update",
    "pause",
    "resume",
    "remove",
    "run",
    "redeliver",
    "cancel",
];

const DESCRIPTION: &str = "\
Manage scheduled jobs of hermes-cron with one tool.

action='create' schedules a new job from a prompt, skills or a script; 'list' shows the jobs; \
'update', 'pause', 'resume', 'remove', 'run' and 'cancel' (stop its running run) act on one \
job named by job_id (its id, or its exact name). Never guess a job_id: list first.

Pass origin (platform, chat_id, thread_id) on create to have the job's results sent back \
into that chat and thread: deliver then defaults to 'origin'.

Schedules are read in the job's time zone (timezone, else the configured zone). Every create \
and update reply lists the job's next three run times in that zone (next_runs).

A job runs later in a fresh session with no memory of this chat: make the prompt \
self-contained. Its final answer is what gets delivered. A job must not schedule more jobs.";

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

/// The `cronjob` tool as `tools/list` shows it.
pub fn cronjob_tool() -> Tool {
    let mut tool = Tool::new(TOOL_NAME, DESCRIPTION, Arc::new(input_schema()));
    tool.annotations = Some(
        ToolAnnotations::with_title("Scheduled jobs")
            .read_only(false)
            .destructive(true)
            .open_world(true),
    );
    tool
}

/// The tool's arguments: a flat object whose only required key is `action`.
pub fn input_schema() -> Map<String, Value> {
    let platforms: Vec<&str> = Platform::ALL.iter().map(|p| p.as_str()).collect();
    let mut properties = json!({
        "action": {
            "type": "string",
            "enum": ACTIONS,
            "description": "What to do. create needs schedule and a prompt (or skills, or a script); update, pause, resume, remove, run and cancel need job_id; redeliver needs run_id."
        },
        "run_id": {
            "type": "integer",
            "description": "For redeliver: the id of a finished run (as the run history shows it), whose stored output is sent again with no model request."
        },
        "to": string("For redeliver: send the run's output here instead of to its job's targets (a deliver value, e.g. 'telegram:CHAT')."),
        "job_id": string("The job's id or exact name, for update, pause, resume, remove, run and cancel."),
        "schedule": string("When it runs, for create and update: '30m' (once, in 30 minutes), 'every 2h', '0 9 * * *' (cron), 'weekdays at 9am', or an ISO time '2026-06-01T09:00' (once). Read in the job's time zone."),
        "prompt": string("For create and update: the complete, self-contained instruction the agent follows on each run. For run: optional context for that one run only (never stored)."),
        "name": string("A short human-friendly name (default: the start of the prompt)."),
        "repeat": {
            "type": "integer",
            "description": "How many runs before the job completes. Omit for the default: once for a one-time schedule, forever for a recurring one; 0 means forever."
        },
        "deliver": string("Where results go. Omit to send them back to the origin chat (or keep them local without an origin). Values: 'origin', 'local' (save only), 'all' (every home channel), a platform name (its home channel), 'platform:chat_id[:thread_id]', or a comma list. On update, '' restores the default."),
        "skills": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Skills the run loads, in order, before the prompt. On update, an empty list removes them."
        },
        "script": string("A script under <HERMES_HOME>/scripts/ (a relative path) run before the agent; its output becomes context. On update, '' removes it."),
        "no_agent": {
            "type": "boolean",
            "description": "True: no model at all, the script's output is the message (empty output sends nothing). Needs script."
        },
        "workdir": string("Absolute path of an existing directory the job works in. On update, '' removes it."),
        "sandbox": string("How confined the job's runs are: strict, standard or off (default: cron.sandbox, else standard). On update, '' returns to the default."),
        "pinned": {
            "type": "boolean",
            "description": "For create and update. ONLY set when the user explicitly asks to pin (or unpin) a job's model: true locks the currently configured model and its provider onto the job, false releases the lock. Never set it on your own initiative; a job's model is its owner's to choose."
        },
        "paused": {
            "type": "boolean",
            "description": "For create: create the job paused; it runs only once resumed (or run explicitly). Default false."
        },
        "paused_reason": string("For create with paused=true: why it waits, shown in the job listing."),
        "failure_deliver": string("Where failure notices go instead of deliver (same values); 'local' mutes them. On update, '' clears it: failures follow deliver again."),
        "monitor": string("A change detector that gates the agent: an http(s) URL or a script under <HERMES_HOME>/scripts/, read each run. Unchanged output skips the agent run; changed output wakes it with the change. Its output must be stable (no timestamps). Not with no_agent. On update, '' removes it."),
        "after": {
            "type": ["object", "string"],
            "description": "Chain this job after another: {\"job\": ID, \"on\": \"success\"|\"failure\"|\"always\"} (on defaults to success), or a job id. The job then also runs each time a run of that job ends with that outcome, given its output as context. A cycle is refused. On update, '' removes the chain."
        },
        "overlap": {
            "type": "string",
            "enum": ["skip", "queue", "replace", ""],
            "description": "For create and update: when a run comes due while the job's previous run goes on — skip it (the default), queue one to run right after, or replace the running run. On update, '' restores skip."
        },
        "continuity": {
            "type": "boolean",
            "description": "True: each run sees the job's own previous output, to continue where it left off. On update, false turns it off."
        },
        "max_turns": {
            "type": "integer",
            "description": "For create and update: at most this many model requests per run; the run then stops as budget_exceeded. On update, 0 removes the cap."
        },
        "max_runtime_seconds": {
            "type": "integer",
            "description": "For create and update: at most this many seconds per run (script and agent); the run is then stopped as budget_exceeded. On update, 0 removes the cap."
        },
        "max_tokens": {
            "type": "integer",
            "description": "For create and update: at most this many prompt plus completion tokens per run. On update, 0 removes the cap."
        },
        "max_cost_usd": {
            "type": "number",
            "description": "For create and update: at most this many US dollars per run, priced by the run's model (a model without a known price is refused). On update, 0 removes the cap."
        },
        "start_at": string("For create and update of a recurring job: no run before this ISO-8601 instant (without an offset, in the job's zone); the first run is the first occurrence at or after it. On update, '' removes it."),
        "until": string("For create and update of a recurring job: no run after this ISO-8601 instant; the job then completes. On update, '' removes it."),
        "jitter": string("For create and update of a recurring job: move every run later by a fixed offset up to this long, derived from the job id, e.g. '5m' (so jobs on one schedule do not all start in the same second). '0' removes it."),
        "timezone": string("IANA time zone the schedule is read in, e.g. 'Europe/Berlin' (default: the configured zone). On update, '' returns to the default."),
        "reason": string("For pause: why, shown in the job listing."),
        "include_disabled": {
            "type": "boolean",
            "description": "For list: include paused and completed jobs (default true)."
        },
        "origin": {
            "type": "object",
            "description": "For create: the chat this request came from, so the job's results can be sent back into it.",
            "properties": {
                "platform": {"type": "string", "enum": platforms, "description": "The chat platform."},
                "chat_id": string("The chat's id on that platform, e.g. '-1001234567890'."),
                "thread_id": string("The thread or topic inside the chat, if any.")
            },
            "required": ["platform", "chat_id"]
        }
    });
    // Hermes 0.22's tool takes these too (a second json! keeps the macro's recursion
    // within its limit).
    let reach = json!({
        "context_from": {
            "type": "array",
            "items": {"type": "string"},
            "description": "For create and update: ids of jobs whose newest output each run is given as context (job A collects, job B works on it). For the job's own previous output use continuity. On update, the list replaces the jobs named before; [] removes them."
        },
        "enabled_toolsets": {
            "type": "array",
            "items": {"type": "string"},
            "description": "For create and update: the only toolsets the job's agent gets, e.g. [\"web\", \"file\"] (terminal, file, web, skills, todo, code_execution, or an MCP server's name). Omit for every tool. [] allows no tool at all."
        }
    });
    if let (Some(all), Value::Object(more)) = (properties.as_object_mut(), reach) {
        all.extend(more);
    }
    let mut schema = Map::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), properties);
    schema.insert("required".into(), json!(["action"]));
    schema
}
