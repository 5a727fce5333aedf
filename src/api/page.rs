//! The web dashboard: one self-contained page (`page.html`, no build step) served at
//! `/` of the API listener, with a Content-Security-Policy that allows exactly its own
//! inline style and script (by SHA-256 hash), API calls to the same origin, and nothing
//! else: no `unsafe-eval`, no `unsafe-inline`, no foreign origin, no framing. The page
//! asks for the API key once per browser tab and calls no API before it has it.

use std::sync::{Arc, OnceLock};

use axum::http::header;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::ApiState;

/// `/`: the page, open without a key (it holds no data; every call it makes needs one).
pub fn routes() -> Router<Arc<ApiState>> {
    Router::new().route("/", get(serve))
}

async fn serve() -> Response {
    let page = page();
    (
        [
            (
                header::CONTENT_SECURITY_POLICY,
                page.content_security_policy.clone(),
            ),
            (header::CACHE_CONTROL, "no-store".to_string()),
        ],
        Html(page.html),
    )
        .into_response()
}

/// The page's bytes and the policy that goes with them.
pub struct Page {
    pub html: &'static str,
    pub content_security_policy: String,
}

const HTML: &str = include_str!("page.html");

/// The dashboard page, its policy computed once from the inline blocks it carries.
pub fn page() -> &'static Page {
    static PAGE: OnceLock<Page> = OnceLock::new();
    PAGE.get_or_init(|| Page {
        html: HTML,
        content_security_policy: policy(HTML),
    })
}

/// `'sha256-…'` sources for every inline `<tag>` block of `html`, in order.
fn inline_hashes(html: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    let mut hashes = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find(&open) {
        let body = &rest[start + open.len()..];
        let Some(end) = body.find(&close) else { break };
        let digest = Sha256::digest(&body.as_bytes()[..end]);
        let encoded = base64::engine::general_purpose::STANDARD.encode(digest);
        hashes.push(format!("'sha256-{encoded}'"));
        rest = &body[end + close.len()..];
    }
    hashes
}

fn policy(html: &str) -> String {
    format!(
        "default-src 'none'; script-src {}; style-src {}; connect-src 'self'; img-src 'self' data:; \
         base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        inline_hashes(html, "script").join(" "),
        inline_hashes(html, "style").join(" "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_allows_only_the_page_own_blocks() {
        let policy = &page().content_security_policy;
        assert!(!policy.contains("unsafe"), "{policy}");
        assert!(!policy.contains('*'), "{policy}");
        let scripts = inline_hashes(HTML, "script");
        assert_eq!(scripts.len(), 1, "one inline script");
        assert!(
            policy.contains(&format!("script-src {}", scripts[0])),
            "{policy}"
        );
        // A changed script byte is a different hash: the browser would refuse it.
        let changed = HTML.replacen("\"use strict\";", "\"use strict\"; ", 1);
        assert_ne!(inline_hashes(&changed, "script"), scripts);
    }

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        for needle in [
            "src=\"http",
            "href=\"http",
            "innerHTML",
            "eval(",
            "new Function",
        ] {
            assert!(!HTML.contains(needle), "the page must not use {needle}");
        }
    }
}
