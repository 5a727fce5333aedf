//! The spend counters of `/metrics`: `hermes_cron_tokens_total{job,model,kind}` and
//! `hermes_cron_cost_usd_total{job,model}`, counted from the runs this daemon recorded
//! since it started (as every counter there). Counting takes one short lock and never
//! blocks or fails a run.

use std::collections::BTreeMap;
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

/// Tokens and dollars by job and model. The lock guards the map alone and is held only
/// to add one run or to copy the map for a scrape.
#[derive(Debug, Default)]
pub struct SpendCounters(Mutex<BTreeMap<(String, String), Counted>>);

/// A label value as the exposition format takes it: backslash, quote and newline escaped.
fn label(text: &str) -> String {
    text.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl SpendCounters {
    /// One run of `job` on `model` spent these tokens (and dollars, when its cost is known).
    pub fn add(&self, job: &str, model: &str, prompt: i64, completion: i64, cost_usd: Option<f64>) {
        let mut counted = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let entry = counted
            .entry((job.to_string(), model.to_string()))
            .or_default();
        entry.prompt_tokens += u64::try_from(prompt).unwrap_or(0);
        entry.completion_tokens += u64::try_from(completion).unwrap_or(0);
        entry.cost_usd += cost_usd.filter(|usd| usd.is_finite()).unwrap_or(0.0);
    }

    /// The two families, in the exposition format.
    pub fn render(&self, out: &mut String) {
        let counted = self.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
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
