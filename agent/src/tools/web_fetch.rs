//! `web_fetch`: one GET of an http(s) page or text resource, following up to five
//! redirects, answered with its text (at most 200,000 characters). Every hop's host is
//! resolved once and connected to at exactly the checked addresses (foundation/src/outbound.rs); a
//! private or loopback address is refused unless `tools.web_fetch.allow_private: true`,
//! a link-local or cloud-metadata one always.

use std::time::Duration;

use serde_json::{json, Value};

use super::{cap, error, refused, text, Schema, Tool, ToolContext, ToolFuture};
use crate::outbound::{pinned, AddressPolicy, OutboundError, Remedy};

const FETCH_CAP: usize = 200_000;

pub struct WebFetch;

impl Tool for WebFetch {
    fn run<'a>(&'a self, args: &'a Value, ctx: &'a ToolContext) -> ToolFuture<'a> {
        Box::pin(async move {
            match text(args, "url") {
                Some(url) => web_fetch(url, ctx.allow_private_fetch).await,
                None => error("web_fetch needs 'url'"),
            }
        })
    }

    fn schema(&self, _: &ToolContext) -> Schema {
        Schema::new("web_fetch", "web", DESCRIPTION, parameters())
    }
}

async fn web_fetch(url: &str, allow_private: bool) -> String {
    let mut current = url.to_string();
    for _ in 0..5 {
        let parsed = match reqwest::Url::parse(&current) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => u,
            _ => return error(format!("'{current}' is not an http(s) URL")),
        };
        let remedy = Remedy {
            private: "set tools.web_fetch.allow_private: true in config.yaml to allow it".into(),
            link_local: "web_fetch never reaches link-local or cloud-metadata addresses".into(),
        };
        let policy = AddressPolicy::new(allow_private, Vec::new(), remedy);
        let addrs = match policy.addresses(&parsed).await {
            Ok(addrs) => addrs,
            Err(e @ OutboundError::Refused { .. }) => return refused(format!("{current}: {e}")),
            Err(e) => return error(e.to_string()),
        };
        // Connect to exactly the addresses checked above (no second DNS answer).
        let builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30));
        let client = match pinned(builder, &parsed, &addrs).build() {
            Ok(c) => c,
            Err(e) => return error(format!("cannot build the HTTP client: {e}")),
        };
        let response = match client.get(parsed.clone()).send().await {
            Ok(r) => r,
            Err(e) => return error(format!("GET {current} failed: {e}")),
        };
        let status = response.status();
        if status.is_redirection() {
            let Some(next) = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|l| l.to_str().ok())
                .and_then(|l| parsed.join(l).ok())
            else {
                return error(format!("{current} redirected without a usable Location"));
            };
            current = next.to_string();
            continue;
        }
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let textual = content_type.is_empty()
            || content_type.starts_with("text/")
            || ["json", "xml", "javascript", "yaml", "csv"]
                .iter()
                .any(|t| content_type.contains(t));
        if !textual {
            return error(format!(
                "{current} is '{content_type}', not text; web_fetch returns text only"
            ));
        }
        let mut body = Vec::new();
        let mut response = response;
        while let Ok(Some(chunk)) = response.chunk().await {
            body.extend_from_slice(&chunk);
            if body.len() >= FETCH_CAP {
                break;
            }
        }
        return json!({
            "url": current,
            "status": status.as_u16(),
            "content_type": content_type,
            "content": cap(&String::from_utf8_lossy(&body), FETCH_CAP),
        })
        .to_string();
    }
    error(format!("{url}: too many redirects"))
}

/// What the model reads about `web_fetch` (Hermes' words).
const DESCRIPTION: &str = "GET a web page or text resource (http/https) and return its text.";

/// The JSON schema of `web_fetch`'s arguments (Hermes' schema).
fn parameters() -> Value {
    json!({"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]})
}
