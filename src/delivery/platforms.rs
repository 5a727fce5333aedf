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
