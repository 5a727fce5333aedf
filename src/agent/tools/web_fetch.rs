//! `web_fetch`: one GET of an http(s) page or text resource, following up to five
//! redirects, answered with its text (at most 200,000 characters). Every hop's host is
//! resolved once and connected to at exactly the checked addresses; a private or
//! loopback address is refused unless `tools.web_fetch.allow_private: true`.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::time::Duration;

use serde_json::{json, Value};

use super::{cap, error, refused, text, Schema, Tool, ToolContext, ToolFuture};

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

/// Loopback, private, link-local, unspecified, CGNAT and unique-local addresses.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || (o[0] == 100 && (64..128).contains(&o[1]))
                || o[0] == 0
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || v6
                    .to_ipv4_mapped()
                    .is_some_and(|v4| is_private(IpAddr::V4(v4)))
        }
    }
}

async fn web_fetch(url: &str, allow_private: bool) -> String {
    let mut current = url.to_string();
    for _ in 0..5 {
        let parsed = match reqwest::Url::parse(&current) {
            Ok(u) if matches!(u.scheme(), "http" | "https") => u,
            _ => return error(format!("'{current}' is not an http(s) URL")),
        };
        let Some(host) = parsed
            .host_str()
            .map(|h| h.trim_matches(['[', ']']).to_string())
        else {
            return error(format!("'{current}' has no host"));
        };
        let port = parsed.port_or_known_default().unwrap_or(80);
        let lookup = host.clone();
        let addrs: Vec<SocketAddr> = match tokio::task::spawn_blocking(move || {
            (lookup.as_str(), port)
                .to_socket_addrs()
                .map(|a| a.collect::<Vec<_>>())
        })
        .await
        {
            Ok(Ok(addrs)) if !addrs.is_empty() => addrs,
            _ => return error(format!("cannot resolve host '{host}'")),
        };
        if !allow_private {
            if let Some(bad) = addrs.iter().find(|a| is_private(a.ip())) {
                return refused(format!(
                    "{current} resolves to the private or loopback address {}; set tools.web_fetch.allow_private: true in config.yaml to allow it",
                    bad.ip()
                ));
            }
        }
        // Connect to exactly the addresses checked above (no second DNS answer).
        let client = match reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .resolve_to_addrs(&host, &addrs)
            .build()
        {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_addresses_are_recognised() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "172.16.0.1",
            "169.254.1.1",
            "::1",
            "fd00::1",
            "0.0.0.0",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:4700::1"] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
    }
}
