//! Channel names in delivery targets, through the real binary: each platform's fake
//! answers the directory endpoint the real API has (Discord's guild channels, Slack's
//! paginated conversations.list, Telegram's getChat, Mattermost's channel by team and
//! name, Matrix's room alias directory) and takes the message only at the id the name
//! stands for. An unknown name is a delivery error naming the channels that exist.

use serde_json::{json, Value};

use crate::delivery::{add_job, home, ok, run, Answer, Fake, Seen};
use crate::support::Hermes;

fn not_found(body: Value) -> Answer {
    (404, Vec::new(), body.to_string())
}

fn discord_api(seen: &Seen, _: usize) -> Answer {
    if seen.header("Authorization").as_deref() != Some("Bot discord-test-token-1234") {
        return (
            401,
            Vec::new(),
            json!({"message": "401: Unauthorized", "code": 0}).to_string(),
        );
    }
    match seen.path.as_str() {
        "/users/@me/guilds" => ok(json!([{"id": "81384788765712384", "name": "Hermes HQ"}])),
        "/guilds/81384788765712384/channels" => ok(json!([
            {"id": "41771983423143937", "name": "general", "type": 0},
            {"id": "41771983423143938", "name": "engineering", "type": 0},
            {"id": "41771983423143939", "name": "Lounge", "type": 2},
        ])),
        "/channels/41771983423143938/messages" => {
            ok(json!({"id": "1100", "channel_id": "41771983423143938"}))
        }
        _ => not_found(json!({"message": "Unknown Channel", "code": 10003})),
    }
}

fn slack_api(seen: &Seen, _: usize) -> Answer {
    if seen.header("Authorization").as_deref() != Some("Bearer xoxb-1111-2222-testtokentest") {
        return ok(json!({"ok": false, "error": "invalid_auth"}));
    }
    let path = seen.path.as_str();
    if let Some(query) = path.strip_prefix("/conversations.list?") {
        if !query.contains("types=public_channel,private_channel") {
            return ok(json!({"ok": false, "error": "invalid_types"}));
        }
        // Two pages: the second only for the cursor the first handed out.
        return if query.contains("cursor=dGVhbTpDMDAy") {
            ok(
                json!({"ok": true, "channels": [{"id": "C0002", "name": "engineering"}],
                      "response_metadata": {"next_cursor": ""}}),
            )
        } else {
            ok(
                json!({"ok": true, "channels": [{"id": "C0001", "name": "general"}],
                      "response_metadata": {"next_cursor": "dGVhbTpDMDAy"}}),
            )
        };
    }
    if path == "/chat.postMessage" && seen.json()["channel"] == "C0002" {
        return ok(json!({"ok": true, "channel": "C0002", "ts": "1772359200.000100"}));
    }
    ok(json!({"ok": false, "error": "channel_not_found"}))
}

const TELEGRAM_TOKEN: &str = "123456789:AAtesttokentesttokentesttokentest12";

fn telegram_api(seen: &Seen, _: usize) -> Answer {
    let body = seen.json();
    let chat_not_found = (
        400,
        Vec::new(),
        json!({"ok": false, "error_code": 400, "description": "Bad Request: chat not found"})
            .to_string(),
    );
    match seen.path.strip_prefix(&format!("/bot{TELEGRAM_TOKEN}")) {
        Some("/getChat") if body["chat_id"] == "@hermes_news" => ok(
            json!({"ok": true, "result": {"id": -1001234567890i64, "type": "channel", "username": "hermes_news"}}),
        ),
        Some("/sendMessage") if body["chat_id"] == json!(-1001234567890i64) => ok(
            json!({"ok": true, "result": {"message_id": 1, "date": 1772359200, "chat": {"id": -1001234567890i64}}}),
        ),
        _ => chat_not_found,
    }
}

fn mattermost_api(seen: &Seen, _: usize) -> Answer {
    if seen.header("Authorization").as_deref() != Some("Bearer mm-test-token") {
        return (401, Vec::new(), json!({"id": "api.context.session_expired.app_error", "message": "Invalid or expired session, please login again.", "status_code": 401}).to_string());
    }
    match seen.path.as_str() {
        "/api/v4/users/me/teams" => ok(json!([{"id": "t3am1d", "name": "ops"}])),
        "/api/v4/teams/t3am1d/channels/name/town%2Dsquare" => {
            ok(json!({"id": "tsq4re1d", "name": "town-square", "type": "O", "team_id": "t3am1d"}))
        }
        "/api/v4/users/me/teams/t3am1d/channels" => ok(json!([
            {"id": "tsq4re1d", "name": "town-square", "type": "O"},
            {"id": "0fft0p1c", "name": "off-topic", "type": "O"},
            {"id": "dm1", "name": "a__b", "type": "D"},
        ])),
        "/api/v4/posts" if seen.json()["channel_id"] == "tsq4re1d" => (
            201,
            Vec::new(),
            json!({"id": "p0st", "channel_id": "tsq4re1d"}).to_string(),
        ),
        _ => not_found(
            json!({"id": "app.channel.get_by_name.missing.app_error", "message": "Channel does not exist.", "status_code": 404}),
        ),
    }
}

fn matrix_api(seen: &Seen, _: usize) -> Answer {
    let path = seen.path.as_str();
    let room = "/_matrix/client/v3/rooms/%21ops%3Aexample%2Eorg";
    if path == "/_matrix/client/v3/directory/room/%23ops%3Aexample%2Eorg" {
        ok(json!({"room_id": "!ops:example.org", "servers": ["example.org"]}))
    } else if path == "/_matrix/client/v3/joined_rooms" {
        ok(json!({"joined_rooms": ["!ops:example.org", "!lobby:example.org"]}))
    } else if path == format!("{room}/state/m.room.encryption/") {
        not_found(json!({"errcode": "M_NOT_FOUND", "error": "Event not found."}))
    } else if path.starts_with(&format!("{room}/send/m.room.message/")) {
        ok(json!({"event_id": "$ev3nt"}))
    } else {
        not_found(json!({"errcode": "M_NOT_FOUND", "error": "Room alias not found."}))
    }
}

/// Runs the "daily report" job delivering to `deliver` with `env`; returns the home
/// and the job id.
fn deliver(deliver: &str, env: &[(&str, String)]) -> (Hermes, String) {
    let hermes = home("report\n", env);
    let id = add_job(&hermes, deliver, &[]);
    run(&hermes, &id);
    (hermes, id)
}

fn delivered_ok(hermes: &Hermes, id: &str) {
    let job = hermes.job(id);
    assert_eq!(job["last_delivery_error"], Value::Null);
    assert_eq!(job["last_status"], "ok");
}

fn paths(fake: &Fake) -> Vec<String> {
    fake.seen().iter().map(|s| s.path.clone()).collect()
}

#[test]
fn a_discord_channel_name_is_found_among_the_guild_s_channels() {
    let fake = Fake::start(discord_api);
    let env = [
        ("DISCORD_BOT_TOKEN", "discord-test-token-1234".to_string()),
        ("DISCORD_API_BASE", fake.base()),
    ];
    let (hermes, id) = deliver("discord:#Engineering", &env);
    delivered_ok(&hermes, &id);
    assert_eq!(
        paths(&fake),
        [
            "/users/@me/guilds",
            "/guilds/81384788765712384/channels",
            "/channels/41771983423143938/messages"
        ]
    );
}

#[test]
fn a_slack_channel_name_is_found_on_the_second_page_of_conversations() {
    let fake = Fake::start(slack_api);
    let env = [
        (
            "SLACK_BOT_TOKEN",
            "xoxb-1111-2222-testtokentest".to_string(),
        ),
        ("SLACK_API_BASE", fake.base()),
    ];
    let (hermes, id) = deliver("slack:#engineering:1772350000.000200", &env);
    delivered_ok(&hermes, &id);
    let seen = paths(&fake);
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert!(seen[0].starts_with("/conversations.list?") && !seen[0].contains("cursor="));
    assert!(seen[1].contains("cursor=dGVhbTpDMDAy"), "{}", seen[1]);
    let post = fake.bodies("/chat.postMessage");
    assert_eq!(post[0]["channel"], "C0002");
    assert_eq!(post[0]["thread_ts"], "1772350000.000200");
}

#[test]
fn a_telegram_username_is_resolved_with_get_chat() {
    let fake = Fake::start(telegram_api);
    let env = [
        ("TELEGRAM_BOT_TOKEN", TELEGRAM_TOKEN.to_string()),
        ("TELEGRAM_API_BASE", fake.base()),
    ];
    let (hermes, id) = deliver("telegram:@hermes_news", &env);
    delivered_ok(&hermes, &id);
    assert_eq!(
        fake.bodies("/getChat"),
        [json!({"chat_id": "@hermes_news"})]
    );
    assert_eq!(
        fake.bodies("/sendMessage")[0]["chat_id"],
        json!(-1001234567890i64)
    );
}

#[test]
fn a_mattermost_channel_name_is_looked_up_in_the_bot_s_teams() {
    let fake = Fake::start(mattermost_api);
    let env = [
        ("MATTERMOST_URL", fake.base()),
        ("MATTERMOST_TOKEN", "mm-test-token".to_string()),
    ];
    let (hermes, id) = deliver("mattermost:~town-square", &env);
    delivered_ok(&hermes, &id);
    assert_eq!(
        paths(&fake),
        [
            "/api/v4/users/me/teams",
            "/api/v4/teams/t3am1d/channels/name/town%2Dsquare",
            "/api/v4/posts"
        ]
    );
}

#[test]
fn a_matrix_room_alias_is_resolved_through_the_room_directory() {
    let fake = Fake::start(matrix_api);
    let env = [
        ("MATRIX_HOMESERVER", fake.base()),
        ("MATRIX_ACCESS_TOKEN", "syt_test_token".to_string()),
    ];
    let (hermes, id) = deliver("matrix:#ops:example.org", &env);
    delivered_ok(&hermes, &id);
    let seen = paths(&fake);
    assert_eq!(
        seen[0],
        "/_matrix/client/v3/directory/room/%23ops%3Aexample%2Eorg"
    );
    assert!(seen[2].starts_with("/_matrix/client/v3/rooms/%21ops%3Aexample%2Eorg/send/"));
}

#[test]
fn an_unknown_channel_name_is_a_delivery_error_naming_the_channels_that_exist() {
    let discord = Fake::start(discord_api);
    let slack = Fake::start(slack_api);
    let mattermost = Fake::start(mattermost_api);
    let matrix = Fake::start(matrix_api);
    let telegram = Fake::start(telegram_api);
    let env = [
        ("DISCORD_BOT_TOKEN", "discord-test-token-1234".to_string()),
        ("DISCORD_API_BASE", discord.base()),
        (
            "SLACK_BOT_TOKEN",
            "xoxb-1111-2222-testtokentest".to_string(),
        ),
        ("SLACK_API_BASE", slack.base()),
        ("MATTERMOST_URL", mattermost.base()),
        ("MATTERMOST_TOKEN", "mm-test-token".to_string()),
        ("MATRIX_HOMESERVER", matrix.base()),
        ("MATRIX_ACCESS_TOKEN", "syt_test_token".to_string()),
        ("TELEGRAM_BOT_TOKEN", TELEGRAM_TOKEN.to_string()),
        ("TELEGRAM_API_BASE", telegram.base()),
    ];
    let (hermes, id) = deliver(
        "discord:#ops,slack:#random,mattermost:~town-hall,matrix:#nope:example.org,telegram:@nobody_here",
        &env,
    );
    let job = hermes.job(&id);
    assert_eq!(job["last_status"], "delivery_failed");
    let error = job["last_delivery_error"].as_str().unwrap();
    for expected in [
        "discord:#ops: unknown discord channel #ops: the bot sees #general (Hermes HQ), #engineering (Hermes HQ)",
        "slack:#random: unknown slack channel #random: the bot sees #general, #engineering",
        "mattermost:~town-hall: unknown mattermost channel ~town-hall: the bot sees ~town-square, ~off-topic",
        "matrix:#nope:example.org: unknown matrix room alias #nope:example.org: the bot sees !ops:example.org, !lobby:example.org",
        "telegram:@nobody_here: unknown telegram chat @nobody_here (Telegram finds public @usernames only",
    ] {
        assert!(error.contains(expected), "{expected}\nnot in\n{error}");
    }
    // Nothing was posted anywhere.
    assert!(discord.bodies("/messages").is_empty());
    assert!(slack.bodies("/chat.postMessage").is_empty());
    assert!(mattermost.bodies("/posts").is_empty());
    assert!(telegram.bodies("/sendMessage").is_empty());
}
