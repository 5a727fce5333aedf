//! The command line's error: a one-line message and the exit code it maps to (1 = the
//! user can fix it, 2 = internal or I/O failure). Only the verbs and `main` use it; every
//! library part of the binary returns its own typed error, converted here.

use std::fmt;

use jobs::{JobError, StoreError};

#[derive(Debug)]
pub struct CliError {
    pub message: String,
    pub code: u8,
}

impl CliError {
    pub fn user(message: impl Into<String>) -> CliError {
        CliError {
            message: message.into(),
            code: 1,
        }
    }

    pub fn internal(message: impl Into<String>) -> CliError {
        CliError {
            message: message.into(),
            code: 2,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<JobError> for CliError {
    fn from(e: JobError) -> CliError {
        let code = if e.is_internal() { 2 } else { 1 };
        CliError {
            message: e.to_string(),
            code,
        }
    }
}

impl From<StoreError> for CliError {
    fn from(e: StoreError) -> CliError {
        CliError::from(JobError::from(e))
    }
}

impl From<schedules::ScheduleError> for CliError {
    fn from(e: schedules::ScheduleError) -> CliError {
        CliError::user(e.to_string())
    }
}

impl From<crate::job_service::ServiceError> for CliError {
    fn from(e: crate::job_service::ServiceError) -> CliError {
        match e.kind() {
            crate::job_service::ErrorKind::Internal => CliError::internal(e.to_string()),
            _ => CliError::user(e.to_string()),
        }
    }
}

impl From<crate::home::HomeError> for CliError {
    fn from(e: crate::home::HomeError) -> CliError {
        CliError::user(e.to_string())
    }
}

impl From<crate::scheduler::SchedulerError> for CliError {
    fn from(e: crate::scheduler::SchedulerError) -> CliError {
        use crate::scheduler::SchedulerError;
        match e {
            SchedulerError::AlreadyRunning(_) => CliError::user(e.to_string()),
            SchedulerError::Config(e) => e.into(),
            SchedulerError::Job(e) => e.into(),
        }
    }
}

impl From<crate::mcp_server::McpError> for CliError {
    fn from(e: crate::mcp_server::McpError) -> CliError {
        match e {
            crate::mcp_server::McpError::NotInitialized(_) => CliError::user(e.to_string()),
            crate::mcp_server::McpError::Scheduler(e) => e.into(),
        }
    }
}

impl From<crate::config::ConfigError> for CliError {
    fn from(e: crate::config::ConfigError) -> CliError {
        match e {
            crate::config::ConfigError::Unreadable { .. } => CliError::internal(e.to_string()),
            _ => CliError::user(e.to_string()),
        }
    }
}
