//! The shape of a `deliver` value, checked when a job is created or edited. Resolving
//! targets to chats belongs to delivery; this module only refuses what can never work.

/// Platforms a job may name. Names outside this list are refused at create time rather
/// than probed in the environment (SPEC §7).
pub const PLATFORMS: &[&str] = &[
    "telegram",
    "discord",
    "slack",
    "whatsapp",
    "signal",
    "matrix",
    "mattermost",
    "email",
    "sms",
    "homeassistant",
];

/// Checks every comma-separated target; returns the value trimmed and de-duplicated.
pub fn validate_deliver(value: &str) -> Result<String, String> {
    let mut targets: Vec<String> = Vec::new();
    for raw in value.split(',') {
        let target = raw.trim();
        if target.is_empty() {
            continue;
        }
        let lower = target.to_ascii_lowercase();
        let ok = match lower.split_once(':') {
            _ if matches!(lower.as_str(), "local" | "origin" | "all") => true,
            None => PLATFORMS.contains(&lower.as_str()),
            Some(("webhook", url)) => url.starts_with("https://") || url.starts_with("http://"),
            Some((platform, rest)) => {
                PLATFORMS.contains(&platform)
                    && rest.split(':').count() <= 2
                    && rest.split(':').all(|part| !part.trim().is_empty())
            }
        };
        if !ok {
            return Err(format!(
                "Unknown delivery target '{target}'. Use local, origin, all, a platform ({}), \
                 <platform>:<chat_id>[:<thread_id>] or webhook:<https-url>",
                PLATFORMS.join(", ")
            ));
        }
        let normalized = match lower.split_once(':') {
            Some(("webhook", _)) => format!("webhook:{}", &target["webhook:".len()..]),
            Some((platform, _)) => format!("{platform}{}", &target[platform.len()..]),
            None => lower,
        };
        if !targets.contains(&normalized) {
            targets.push(normalized);
        }
    }
    if targets.is_empty() {
        return Err("Empty delivery target: use local, origin, all or a platform name".into());
    }
    Ok(targets.join(","))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_grammar_and_deduplicates() {
        assert_eq!(validate_deliver("local").unwrap(), "local");
        assert_eq!(
            validate_deliver("Telegram, origin,telegram").unwrap(),
            "telegram,origin"
        );
        assert_eq!(
            validate_deliver("telegram:-1001234567890:17").unwrap(),
            "telegram:-1001234567890:17"
        );
        assert_eq!(
            validate_deliver("webhook:https://example.com/Hook").unwrap(),
            "webhook:https://example.com/Hook"
        );
    }

    #[test]
    fn refuses_unknown_platforms_and_malformed_targets() {
        for bad in [
            "pigeon",
            "telegram:",
            "telegram:1:2:3",
            "webhook:ftp://x",
            ",",
            "myspace:42",
        ] {
            assert!(validate_deliver(bad).is_err(), "{bad}");
        }
    }
}
