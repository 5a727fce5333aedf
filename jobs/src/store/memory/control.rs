//! The memory store's global pause and heartbeat ([`Control`]).

use crate::store::estop::GlobalPause;
use crate::store::{Beat, Control, Heartbeat, StoreError, StoreInfo};

use super::MemoryStore;

#[async_trait::async_trait]
impl Control for MemoryStore {
    async fn global_pause(&self) -> Result<Option<GlobalPause>, StoreError> {
        Ok(self.lock().pause.clone())
    }

    async fn set_global_pause(&self, pause: Option<&GlobalPause>) -> Result<bool, StoreError> {
        let mut inner = self.lock();
        Ok(std::mem::replace(&mut inner.pause, pause.cloned()).is_some())
    }

    async fn beat(&self, beat: &Beat) -> Result<(), StoreError> {
        let mut inner = self.lock();
        let heartbeat = &mut inner.heartbeat;
        match beat {
            Beat::Started { pid } => heartbeat.pid = Some(i64::from(*pid)),
            Beat::Alive(at) => {
                heartbeat.seen = true;
                heartbeat.alive_at = Some(*at);
            }
            Beat::PassSucceeded(at) => heartbeat.last_success = Some(*at),
            Beat::PassFailed(at, why) => heartbeat.last_error = Some((*at, why.clone())),
            Beat::Stopped => heartbeat.alive_at = None,
        }
        Ok(())
    }

    async fn heartbeat(&self) -> Result<Heartbeat, StoreError> {
        Ok(self.lock().heartbeat.clone())
    }

    async fn describe(&self) -> Result<StoreInfo, StoreError> {
        Ok(StoreInfo {
            backend: "memory",
            location: "memory".into(),
            schema_version: None,
        })
    }
}
