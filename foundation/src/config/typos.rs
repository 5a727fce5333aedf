//! Likely misspellings in config.yaml: a key nobody reads that is one or two edits away
//! from a key that is read (`modle:`, `timezon:`, `cron: {catchup_missed: …}`). The file
//! is shared with Python Hermes, so a key is only called a typo when neither this
//! program nor any Hermes release we know reads it; unknown keys far from every known
//! one are left alone (a newer Hermes may read them). It never changes the file.

use super::Config;

/// Top-level keys of Hermes 0.19 and 0.22 (`DEFAULT_CONFIG` in `hermes_cli/config.py`),
/// with those only this program reads.
#[rustfmt::skip]
const TOP_LEVEL: &[&str] = &[
    "_config_version", "agent", "approvals", "attachments", "auth", "auxiliary", "bedrock",
    "bot_desktop", "bot_mode", "browser", "checkpoints", "code_execution",
    "command_allowlist", "compression", "computer_use", "context", "context_file_max_chars",
    "context_file_read_timeout", "credential_pool_strategies", "cron", "curator",
    "custom_providers", "dashboard", "database", "delegation", "desktop", "discord",
    "display", "doctor", "fallback", "fallback_model", "fallback_providers",
    "file_read_max_chars", "gateway", "goals", "honcho", "hooks", "hooks_auto_accept",
    "human_delay", "kanban", "local_runtime", "logging", "loops", "lsp", "matrix",
    "mattermost", "max_concurrent_sessions", "max_live_sessions", "mcp",
    "mcp_discovery_timeout", "mcp_servers", "mcp_single_query_discovery_timeout", "memory",
    "moa", "model", "model_catalog", "model_overrides", "models_dev", "monitoring",
    "network", "nous", "onboarding", "openrouter", "paste_collapse_char_threshold",
    "paste_collapse_threshold", "paste_collapse_threshold_fallback", "personalities",
    "platform_hints", "plugins", "prefill_messages_file", "pricing", "privacy",
    "prompt_caching", "providers", "proxy", "quick_commands", "runtime", "secrets",
    "security", "session", "sessions", "skills", "slack", "streaming", "stt", "telegram",
    "telemetry", "terminal", "timezone", "tool_loop_guardrails", "tool_output", "tools",
    "toolsets", "tts", "updates", "vault", "vertex", "vision", "voice", "wake_word", "web",
    "whatsapp", "x_search",
];

/// Keys of `cron:` that Hermes 0.19 or 0.22 reads, or this program does.
#[rustfmt::skip]
const CRON: &[&str] = &[
    "allow_agent_scheduling", "bare_duration", "budget", "catch_up_missed", "catch_up_spread", "chronos",
    "completed_retention_days", "delivery", "delivery_retry_hours",
    "failure_repeat_alert_hours", "max_parallel_jobs", "media_send_timeout_seconds",
    "metrics_job_series",
    "mirror_delivery", "model", "model_provider", "output_retention", "preflight",
    "provider", "require_restart_safe_scope", "retry_unreachable", "sandbox",
    "script_timeout_seconds",
    "session_db_timeout_seconds", "store", "wrap_response",
];

/// Keys of `model:` that Hermes reads, or this program does.
#[rustfmt::skip]
const MODEL: &[&str] = &[
    "api_key", "api_mode", "base_url", "context_length", "default", "max_tokens", "model",
    "provider", "reasoning_effort", "temperature",
];

/// One line per likely misspelling: where it is, and the key it probably means.
pub fn likely_typos(config: &Config) -> Vec<String> {
    let sections: [(&str, &serde_yaml_ng::Mapping, &[&str]); 3] = [
        ("", &config.extra, TOP_LEVEL),
        ("cron.", &config.cron.extra, CRON),
        ("model.", &config.model.extra, MODEL),
    ];
    let mut found = Vec::new();
    for (prefix, extra, known) in sections {
        for key in extra.keys().filter_map(|k| k.as_str()) {
            if known.contains(&key) {
                continue;
            }
            if let Some(nearest) = nearest(key, known) {
                found.push(format!(
                    "config.yaml has '{prefix}{key}', which nothing reads: did you mean '{prefix}{nearest}'?"
                ));
            }
        }
    }
    found
}

/// The known key one or two edits away from `key` (the closest; the first on a tie), if
/// `key` is long enough for that to mean a typo rather than another word.
fn nearest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    let most = if key.chars().count() >= 6 { 2 } else { 1 };
    known
        .iter()
        .map(|candidate| (edit_distance(key, candidate), *candidate))
        .filter(|(distance, _)| *distance <= most)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// Edits (insert, delete, substitute, swap two neighbours) that turn `a` into `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typos(yaml: &str) -> Vec<String> {
        likely_typos(&Config::parse(yaml, std::path::Path::new("config.yaml")).unwrap())
    }

    #[test]
    fn near_misses_are_named_with_the_key_they_probably_mean() {
        assert_eq!(
            typos("modle: {default: m}\ntimezon: UTC\ncron: {catchup_missed: true}\nmodel: {defualt: m}\n"),
            [
                "config.yaml has 'modle', which nothing reads: did you mean 'model'?",
                "config.yaml has 'timezon', which nothing reads: did you mean 'timezone'?",
                "config.yaml has 'cron.catchup_missed', which nothing reads: did you mean 'cron.catch_up_missed'?",
                "config.yaml has 'model.defualt', which nothing reads: did you mean 'model.default'?",
            ]
        );
    }

    #[test]
    fn keys_hermes_reads_and_unrelated_words_are_left_alone() {
        assert!(typos(
            "terminal: {backend: local}\ndisplay: {}\nmy_own_notes: x\nplatform_toolsets: {}\ncron: {mirror_delivery: true, chronos: {}}\n"
        )
        .is_empty());
    }

    #[test]
    fn distance_counts_a_swap_as_one_edit() {
        assert_eq!(edit_distance("modle", "model"), 1);
        assert_eq!(edit_distance("timezon", "timezone"), 1);
        assert_eq!(edit_distance("abc", "xyz"), 3);
    }
}
