//! The gateway lifecycle guard at job creation: a job whose prompt or script would stop,
//! restart or kill the Hermes gateway is refused before anything is stored (a gateway
//! that schedules its own restart loops under launchd/systemd). It owns only that
//! decision; it reads nothing, and prose that merely mentions a gateway passes.

use std::sync::LazyLock;

use regex::Regex;

/// Command shapes only, each anchored on a concrete program (`hermes gateway`,
/// `launchctl`, `systemctl`, `kill`/`pkill`), so "the API gateway may restart" is fine.
/// `hermes gateway start` is allowed: starting is harmless.
const GATEWAY_LIFECYCLE: &str = concat!(
    r"(?i)(?:hermes\s+gateway\s+(?:restart|stop))",
    r"|(?:launchctl\s+(?:kickstart|unload|load|stop|restart)\b[^\n]*\bhermes[.\-]?gateway)",
    r"|(?:systemctl\s+(?:-\S+\s+)*(?:restart|stop|start)\b[^\n]*\bhermes[.\-]?gateway)",
    r"|(?:p?kill\b[^\n]*\bhermes\b[^\n]*\bgateway)",
    r"|(?:p?kill\b[^\n]*\bgateway\b[^\n]*\bhermes)",
);

/// Compiled once; `the_pattern_compiles` keeps a broken edit from shipping.
static COMPILED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(GATEWAY_LIFECYCLE)
        .unwrap_or_else(|e| panic!("the gateway lifecycle pattern does not compile: {e}"))
});

/// The one-line refusal the CLI prints.
pub const REFUSAL: &str = "Blocked: the job would stop, restart or kill the Hermes gateway (e.g. 'hermes gateway restart'), which makes a supervised gateway restart itself in a loop; run that command from a shell instead of a cron job";

/// True when the prompt and the script's text, read together (a command split across
/// the two still counts), contain a gateway lifecycle command.
pub fn touches_gateway(prompt: &str, script_text: Option<&str>) -> bool {
    let combined = match script_text {
        Some(script) => format!("{prompt}\n{script}"),
        None => prompt.to_string(),
    };
    COMPILED.is_match(&combined)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pattern_compiles() {
        assert!(COMPILED.is_match("hermes gateway stop"));
    }

    #[test]
    fn commands_are_refused_and_prose_passes() {
        for bad in [
            "Then run `hermes gateway restart` to apply it",
            "HERMES  GATEWAY STOP",
            "launchctl kickstart -k gui/501/ai.hermes.gateway",
            "sudo systemctl --user restart hermes-gateway.service",
            "pkill -f 'hermes gateway'",
            "kill $(pgrep -f gateway) # hermes",
        ] {
            assert!(touches_gateway(bad, None), "{bad}");
        }
        for fine in [
            "Summarise the Kong API gateway autoscaling and restart behaviour",
            "hermes gateway start --profile work",
            "Check whether the gateway restarted last night",
        ] {
            assert!(!touches_gateway(fine, None), "{fine}");
        }
        assert!(touches_gateway(
            "Run the maintenance script",
            Some("#!/bin/sh\nhermes gateway restart\n")
        ));
    }
}
