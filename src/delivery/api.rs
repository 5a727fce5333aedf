//! The scheduler's delivery over the real platform APIs: resolves targets from the
//! home's environment at send time and sends through the senders of this module's
//! siblings. The scheduler holds it as a [`Delivery`] so tests can pass a fake.

use std::path::PathBuf;

use super::http::Failure;
use super::{deliver_run, retry, DeliveryReport, RunDelivery};
use crate::scheduler::{BoxFuture, Delivery};

/// Delivery to the chat APIs and webhooks configured in one Hermes home.
pub struct ApiDelivery {
    pub home: PathBuf,
}

impl Delivery for ApiDelivery {
    fn deliver<'a>(&'a self, run: RunDelivery<'a>) -> BoxFuture<'a, DeliveryReport> {
        Box::pin(deliver_run(run))
    }

    fn retry<'a>(
        &'a self,
        target: &'a str,
        payload: &'a str,
        skip: usize,
    ) -> BoxFuture<'a, Result<(), (Failure, usize)>> {
        Box::pin(retry(&self.home, target, payload, skip))
    }
}
