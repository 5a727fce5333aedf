//! The scheduler's delivery over the real platform APIs: resolves targets from the
//! home's environment at send time and sends through the senders of this module's
//! siblings. The scheduler holds it as a [`Delivery`] so tests can pass a fake.

use std::path::PathBuf;
use std::sync::Arc;

use super::http::Failure;
use super::{deliver_run, retry, DeliveryReport, HomeFiles, RunDelivery, Shared};
use crate::{BoxFuture, Delivery};

/// Delivery to the chat APIs and webhooks configured in one Hermes home.
pub struct PlatformDelivery {
    pub home: PathBuf,
    /// The client, pacer and caches every send of this delivery shares.
    pub shared: Arc<Shared>,
}

impl PlatformDelivery {
    /// A delivery for `home` with its own client, pacer and caches.
    pub fn new(home: PathBuf) -> PlatformDelivery {
        PlatformDelivery {
            home,
            shared: Arc::new(Shared::default()),
        }
    }
}

impl Delivery for PlatformDelivery {
    fn deliver<'a>(&'a self, run: RunDelivery<'a>) -> BoxFuture<'a, DeliveryReport> {
        Box::pin(deliver_run(&self.shared, run))
    }

    fn retry<'a>(
        &'a self,
        files: HomeFiles<'a>,
        target: &'a str,
        payload: &'a str,
        skip: usize,
    ) -> BoxFuture<'a, Result<(), (Failure, usize)>> {
        Box::pin(retry(&self.shared, files, target, payload, skip))
    }
}
