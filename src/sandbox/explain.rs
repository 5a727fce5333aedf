//! `hermes cron sandbox explain JOB [--json]`: the effective policy of a job's runs.
