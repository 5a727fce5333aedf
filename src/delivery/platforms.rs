//! The table of platforms this build sends to: one row per platform, each row the
//! [`Description`] its own module declares. The order is Python Hermes' order of home
//! channels (`_HOME_TARGET_ENV_VARS`), which `origin` without an origin falls back
//! through, so both pick the same home. Nothing here sends; adding a platform is its
//! module and its row.

use jobs::target::Platform;

use super::sender::Description;
use super::{
    bluebubbles, dingtalk, discord, email, feishu, homeassistant, matrix, mattermost, qqbot,
    signal, slack, sms, telegram, wecom, wecom_callback, weixin, whatsapp, whatsapp_cloud, yuanbao,
};

/// Every platform with a sender, in home-channel order.
pub static ALL: [&Description; 19] = [
    &matrix::DESCRIPTION,
    &telegram::DESCRIPTION,
    &discord::DESCRIPTION,
    &slack::DESCRIPTION,
    &signal::DESCRIPTION,
    &mattermost::DESCRIPTION,
    &sms::DESCRIPTION,
    &email::DESCRIPTION,
    &dingtalk::DESCRIPTION,
    &feishu::DESCRIPTION,
    &wecom::DESCRIPTION,
    &weixin::DESCRIPTION,
    &bluebubbles::DESCRIPTION,
    &qqbot::DESCRIPTION,
    &whatsapp::DESCRIPTION,
    &whatsapp_cloud::DESCRIPTION,
    &homeassistant::DESCRIPTION,
    &wecom_callback::DESCRIPTION,
    &yuanbao::DESCRIPTION,
];

/// The row of a platform; every [`Platform`] has one (a test holds the table to it).
pub fn describe(platform: Platform) -> Option<&'static Description> {
    ALL.iter().find(|d| d.platform == platform).copied()
}

/// The variables a platform's sender needs (doctor names the missing ones).
pub fn required_vars(platform: Platform) -> &'static [&'static str] {
    describe(platform).map_or(&[], |d| d.required)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            ALL.map(|d| d.platform.as_str()),
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
