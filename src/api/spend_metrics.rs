//! The spend counters of `/metrics`: `hermes_cron_tokens_total{job,model,kind}` and
//! `hermes_cron_cost_usd_total{job,model}`, counted from the runs this daemon recorded
//! since it started (as every counter there). Counting takes one short lock and never
//! blocks or fails a run. The series stay bounded however many jobs run: past the first
//! `cron.metrics_job_series` jobs (default [`DEFAULT_JOB_SERIES`]), the others are
//! counted together under `job="_other"`, so a store of a million jobs does not make a
//! million series.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;
use std::sync::Mutex;

/// What the runs of one job on one model spent.
#[derive(Debug, Clone, Copy, Default)]
struct Counted {
    prompt_tokens: u64,
    completion_tokens: u64,
    /// Dollars of the runs with a known cost.
    cost_usd: f64,
}

/// The jobs with series of their own, by default.
pub const DEFAULT_JOB_SERIES: usize = 500;

/// The label of the jobs counted together once the per-job series are used up.
pub const OTHER_JOBS: &str = "_other";

/// Tokens and dollars by job and model. The lock guards the map alone and is held only
/// to add one run or to copy the map for a scrape.
#[derive(Debug)]
pub struct SpendCounters(Mutex<Counters>);

#[derive(Debug, Clone)]
struct Counters {
    counted: BTreeMap<(String, String), Counted>,
    /// The jobs with series of their own (the first ones to spend).
    jobs: HashSet<String>,
    max_jobs: usize,
}

impl Default for SpendCounters {
    fn default() -> SpendCounters {
        SpendCounters::with_job_series(DEFAULT_JOB_SERIES)
    }
}

/// A label value as the exposition format takes it: backslash, quote and newline escaped.
fn label(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl SpendCounters {
    /// Counters with series of their own for at most `max_jobs` jobs.
    pub fn with_job_series(max_jobs: usize) -> SpendCounters {
        SpendCounters(Mutex::new(Counters {
            counted: BTreeMap::new(),
            jobs: HashSet::new(),
            max_jobs,
        }))
    }

    /// One run of `job` on `model` spent these tokens (and dollars, when its cost is known).
    pub fn add(&self, job: &str, model: &str, prompt: i64, completion: i64, cost_usd: Option<f64>) {
        let mut counters = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let Counters {
            counted,
            jobs,
            max_jobs,
        } = &mut *counters;
        let job = if jobs.contains(job) {
            job
        } else if jobs.len() < *max_jobs {
            jobs.insert(job.to_string());
            job
        } else {
            OTHER_JOBS
        };
        let entry = counted
            .entry((job.to_string(), model.to_string()))
            .or_default();
        entry.prompt_tokens += u64::try_from(prompt).unwrap_or(0);
        entry.completion_tokens += u64::try_from(completion).unwrap_or(0);
        entry.cost_usd += cost_usd.filter(|usd| usd.is_finite()).unwrap_or(0.0);
    }

    /// The two families, in the exposition format.
    pub fn render(&self, out: &mut String) {
        let counted = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .counted
            .clone();
        out.push_str("# HELP hermes_cron_tokens_total Tokens the runs recorded by this daemon used, by job, model and kind (prompt or completion).\n# TYPE hermes_cron_tokens_total counter\n");
        for ((job, model), c) in &counted {
            let (job, model) = (label(job), label(model));
            for (kind, n) in [
                ("prompt", c.prompt_tokens),
                ("completion", c.completion_tokens),
            ] {
                let _ = writeln!(
                    out,
                    "hermes_cron_tokens_total{{job=\"{job}\",model=\"{model}\",kind=\"{kind}\"}} {n}"
                );
            }
        }
        out.push_str("# HELP hermes_cron_cost_usd_total US dollars the runs recorded by this daemon cost, by job and model (runs without a known price count nothing).\n# TYPE hermes_cron_cost_usd_total counter\n");
        for ((job, model), c) in &counted {
            let _ = writeln!(
                out,
                "hermes_cron_cost_usd_total{{job=\"{}\",model=\"{}\"}} {}",
                label(job),
                label(model),
                c.cost_usd
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_past_the_series_limit_are_counted_together() {
        let counters = SpendCounters::with_job_series(2);
        for job in ["a", "b", "c", "d", "a"] {
            counters.add(job, "m", 1, 0, None);
        }
        let mut out = String::new();
        counters.render(&mut out);
        let series = |job: &str| {
            format!("hermes_cron_tokens_total{{job=\"{job}\",model=\"m\",kind=\"prompt\"}} ")
        };
        assert!(out.contains(&format!("{}2\n", series("a"))), "{out}");
        assert!(out.contains(&format!("{}1\n", series("b"))), "{out}");
        assert!(out.contains(&format!("{}2\n", series("_other"))), "{out}");
        assert!(!out.contains("job=\"c\""), "{out}");
    }

    #[test]
    fn runs_add_up_by_job_and_model_with_labels_escaped() {
        let counters = SpendCounters::default();
        counters.add("a", "m\"1", 10, 5, Some(0.5));
        counters.add("a", "m\"1", 1, 1, None);
        let mut out = String::new();
        counters.render(&mut out);
        assert!(
            out.contains(
                "hermes_cron_tokens_total{job=\"a\",model=\"m\\\"1\",kind=\"prompt\"} 11\n"
            ),
            "{out}"
        );
        assert!(
            out.contains(
                "hermes_cron_tokens_total{job=\"a\",model=\"m\\\"1\",kind=\"completion\"} 6\n"
            ),
            "{out}"
        );
        assert!(
            out.contains("hermes_cron_cost_usd_total{job=\"a\",model=\"m\\\"1\"} 0.5\n"),
            "{out}"
        );
    }
}
