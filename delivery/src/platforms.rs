//! The table of platforms this build sends to: one row per platform, each row the
//! [`Description`] its own module declares. The order is Python Hermes' order of home
//! channels (`_HOME_TARGET_ENV_VARS`), which `origin` without an origin falls back
//! through, so both pick the same home. Nothing here sends; adding a platform is its
//! module and its row.

use jobs::target::Platform;

use super::sender::Description;

/// Every platform with a sender, in home-channel order.
pub static ALL: &[&Description] = &[
    &super::matrix::DESCRIPTION,
    &super::telegram::DESCRIPTION,
    &super::discord::DESCRIPTION,
    &super::slack::DESCRIPTION,
    &super::signal::DESCRIPTION,
    &super::mattermost::DESCRIPTION,
    &super::sms::DESCRIPTION,
    &super::email::DESCRIPTION,
    &super::dingtalk::DESCRIPTION,
    &super::feishu::DESCRIPTION,
    &super::wecom::DESCRIPTION,
    &super::weixin::DESCRIPTION,
    &super::bluebubbles::DESCRIPTION,
    &super::qqbot::DESCRIPTION,
    &super::whatsapp::DESCRIPTION,
    &super::whatsapp_cloud::DESCRIPTION,
    &super::homeassistant::DESCRIPTION,
    &super::wecom_callback::DESCRIPTION,
    &super::yuanbao::DESCRIPTION,
];

/// The row of a platform; every [`Platform`] has one (a test holds the table to it).
pub fn describe(platform: Platform) -> Option<&'static Description> {
    ALL.iter().find(|d| d.platform == platform).copied()
}

/// The variables a platform's sender needs (doctor names the missing ones).
pub fn required_vars(platform: Platform) -> &'static [&'static str] {
    describe(platform).map_or(&[], |d| d.required)
}

/// True for a variable that holds a platform's credentials or coordinates: one a sender
/// needs (or its other name), or a credential-named one under a platform's own prefix
/// (`TELEGRAM_WEBHOOK_SECRET`, `SLACK_APP_TOKEN`). Programs a run starts for other
/// purposes (an external agent) never get them.
pub fn is_platform_secret(name: &str) -> bool {
    let prefix = |var: &str| var.split('_').next().map(|p| format!("{p}_"));
    ALL.iter().any(|d| {
        let named = d
            .required
            .iter()
            .chain(d.aliases.iter().map(|(_, alias)| alias));
        named.clone().any(|var| *var == name)
            || (foundation::redact::is_secret_name(name)
                && named
                    .filter_map(|var| prefix(var))
                    .any(|p| name.starts_with(&p)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn platform_secrets_are_their_variables_and_credentials_under_their_prefix() {
        for name in [
            "TELEGRAM_BOT_TOKEN",
            "TELEGRAM_WEBHOOK_SECRET",
            "SLACK_APP_TOKEN",
            "DINGTALK_WEBHOOK_URL",
            "YUANBAO_APP_KEY",
            "EMAIL_PASSWORD",
            "TWILIO_AUTH_TOKEN",
        ] {
            assert!(is_platform_secret(name), "{name}");
        }
        for name in [
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "TELEGRAM_HOME_CHANNEL",
            "PATH",
        ] {
            assert!(!is_platform_secret(name), "{name}");
        }
    }

    #[test]
    fn every_platform_has_exactly_one_row() {
        for platform in Platform::ALL {
            let rows = ALL.iter().filter(|d| d.platform == platform).count();
            assert_eq!(rows, 1, "{platform}");
        }
    }

    /// The home-channel order of Python Hermes.
    #[test]
    fn rows_are_in_home_channel_order() {
        assert_eq!(
            ALL.iter().map(|d| d.platform.as_str()).collect::<Vec<_>>(),
            [
                "matrix",
                "telegram",
                "discord",
                "slack",
                "signal",
                "mattermost",
                "sms",
                "email",
                "dingtalk",
                "feishu",
                "wecom",
                "weixin",
                "bluebubbles",
                "qqbot",
                "whatsapp",
                "whatsapp_cloud",
                "homeassistant",
                "wecom_callback",
                "yuanbao"
            ]
        );
    }
}
