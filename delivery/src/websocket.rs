//! What the WebSocket senders (the WeCom AI bot, Yuanbao) share: connecting with TLS on
//! ring and the webpki roots, as every other client of ours, how a failed connection is
//! judged, and how a connection lost while waiting for an answer is told.
//! Each sender keeps its own frames and answers; nothing here sends a message.

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Error as WsError;
use tokio_tungstenite::tungstenite::Message as Frame;
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

use super::http::Failure;

/// A WebSocket sender's connection.
pub type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Opens the gateway at `url` within `limit` (named by `gateway` and its variable
/// `url_var` in failures).
pub async fn connect(
    url: &str,
    limit: Duration,
    gateway: &str,
    url_var: &str,
) -> Result<Socket, Failure> {
    let connecting =
        tokio_tungstenite::connect_async_tls_with_config(url, None, true, Some(tls()?));
    match tokio::time::timeout(limit, connecting).await {
        Err(_) => Err(Failure::Transient(format!(
            "cannot connect: no answer in {} s",
            limit.as_secs()
        ))),
        Ok(Err(e)) => Err(connect_failure(e, gateway, url_var)),
        Ok(Ok((socket, _))) => Ok(socket),
    }
}

/// The TLS connector of a WebSocket sender.
fn tls() -> Result<Connector, Failure> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Failure::Final(format!("cannot set up TLS: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Connector::Rustls(Arc::new(config)))
}

/// A connection that never opened: nothing was sent, so a busy or failing gateway is
/// tried again; a refusal or a wrong URL (named by its variable `url_var`) is final.
fn connect_failure(error: WsError, gateway: &str, url_var: &str) -> Failure {
    match error {
        WsError::Http(response) => {
            let status = response.status().as_u16();
            let text = format!("the {gateway} gateway refused the WebSocket (HTTP {status})");
            match status {
                429 | 500..=599 => Failure::Transient(text),
                _ => Failure::Final(text),
            }
        }
        WsError::Url(e) => Failure::Final(format!("{url_var} is not a ws:// or wss:// URL ({e})")),
        other => Failure::Transient(format!("cannot connect ({other})")),
    }
}

/// How a WebSocket sender lost its answer.
#[derive(Debug, thiserror::Error)]
pub enum Lost {
    #[error("no answer from {gateway} in {} s", .limit.as_secs())]
    NoAnswer {
        gateway: &'static str,
        limit: Duration,
    },
    #[error("the {gateway} connection closed")]
    Closed { gateway: &'static str },
    #[error("the {gateway} connection failed ({error})")]
    Failed {
        gateway: &'static str,
        error: WsError,
    },
}

/// What waiting for the next frame until a deadline gave.
pub type Next = Result<Option<Result<Frame, WsError>>, tokio::time::error::Elapsed>;

impl Lost {
    /// The next frame, or how the connection was lost.
    pub fn read(gateway: &'static str, limit: Duration, next: Next) -> Result<Frame, Lost> {
        match next {
            Err(_) => Err(Lost::NoAnswer { gateway, limit }),
            Ok(None) | Ok(Some(Ok(Frame::Close(_)))) => Err(Lost::Closed { gateway }),
            Ok(Some(Err(error))) => Err(Lost::Failed { gateway, error }),
            Ok(Some(Ok(frame))) => Ok(frame),
        }
    }

    /// The failure of a message whose frame went out before the connection was lost: it
    /// may have arrived, so it is never resent.
    pub fn after_sending(&self) -> Failure {
        Failure::Unknown(format!(
            "{self} after the message was sent; not resent, to never post twice"
        ))
    }
}
