//! What runs spent (docs/AGENT.md, "Global spend caps"): the ledger's tokens and dollars
//! summed per job and model over a window, regrouped per job or per model for `hermes
//! cron cost`, the windows of the global caps (a UTC day, a calendar month) and the one
//! pure decision whether a cap is spent. It never reads a clock or a store: the caller
//! hands it "now" and the sums, so every backend and every host decides alike.

use std::collections::BTreeMap;

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use serde::Serialize;

use crate::ledger::RunRow;
use crate::model::caps::usd_text;

/// Days a run that spent tokens is kept in the ledger at least, whatever the per-job
/// row limit: the monthly window and `hermes cron cost --since 60d` count every one.
pub const SPEND_KEPT_DAYS: i64 = 62;

/// The runs of one job on one model that spent tokens in a window, summed.
#[derive(Debug, Clone, PartialEq)]
pub struct Spend {
    pub job_id: String,
    /// The model that answered the runs (`None`: not recorded).
    pub model: Option<String>,
    pub runs: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    /// The dollars of the runs whose cost is known; `None` when none is.
    pub cost_usd: Option<f64>,
    /// Runs that reported tokens but have no cost (their model had no price).
    pub unpriced_runs: i64,
}

/// Sums ledger rows the way the backends' queries do: the terminal rows that spent
/// tokens or dollars and finished at or after `since`, per job and model.
pub fn sum_rows<'a>(
    rows: impl IntoIterator<Item = &'a RunRow>,
    since: DateTime<Utc>,
) -> Vec<Spend> {
    let since = crate::ledger::ledger_time(since);
    let mut sums: BTreeMap<(String, Option<String>), Spend> = BTreeMap::new();
    for row in rows {
        let spent = row.prompt_tokens.is_some() || row.cost_usd.is_some();
        let finished = row
            .finished_at
            .as_deref()
            .is_some_and(|at| at >= since.as_str());
        if !spent || !finished {
            continue;
        }
        let key = (row.job_id.clone(), row.model.clone());
        let sum = sums.entry(key).or_insert_with(|| Spend {
            job_id: row.job_id.clone(),
            model: row.model.clone(),
            runs: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            cost_usd: None,
            unpriced_runs: 0,
        });
        sum.runs += 1;
        sum.prompt_tokens += row.prompt_tokens.unwrap_or(0);
        sum.completion_tokens += row.completion_tokens.unwrap_or(0);
        match row.cost_usd {
            Some(cost) => sum.cost_usd = Some(sum.cost_usd.unwrap_or(0.0) + cost),
            None => sum.unpriced_runs += 1,
        }
    }
    sums.into_values().collect()
}

/// The dollars of every run with a known cost.
pub fn total_cost(spend: &[Spend]) -> f64 {
    spend.iter().filter_map(|s| s.cost_usd).sum()
}

/// How `hermes cron cost` groups the spend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Job,
    Model,
}

/// One line of `hermes cron cost`: a job's or a model's spend in the window. Its JSON is
/// `{"job_id" | "model", "runs", "prompt_tokens", "completion_tokens", "cost_usd",
/// "unpriced_runs"}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpendLine {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
    /// The model (`null` for runs that recorded none) when grouped by model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<Option<String>>,
    pub runs: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub cost_usd: Option<f64>,
    pub unpriced_runs: i64,
}

/// The spend per job or per model, the most expensive first (ties by name).
pub fn grouped(spend: &[Spend], by: By) -> Vec<SpendLine> {
    let mut lines: BTreeMap<Option<String>, SpendLine> = BTreeMap::new();
    for s in spend {
        let key = match by {
            By::Job => Some(s.job_id.clone()),
            By::Model => s.model.clone(),
        };
        let line = lines.entry(key.clone()).or_insert_with(|| SpendLine {
            job_id: (by == By::Job).then(|| s.job_id.clone()),
            model: (by == By::Model).then(|| key.clone()),
            runs: 0,
            prompt_tokens: 0,
            completion_tokens: 0,
            cost_usd: None,
            unpriced_runs: 0,
        });
        line.runs += s.runs;
        line.prompt_tokens += s.prompt_tokens;
        line.completion_tokens += s.completion_tokens;
        line.unpriced_runs += s.unpriced_runs;
        if let Some(cost) = s.cost_usd {
            line.cost_usd = Some(line.cost_usd.unwrap_or(0.0) + cost);
        }
    }
    let mut lines: Vec<SpendLine> = lines.into_values().collect();
    lines.sort_by(|a, b| {
        let cost = |l: &SpendLine| l.cost_usd.unwrap_or(-1.0);
        cost(b).total_cmp(&cost(a))
    });
    lines
}

/// The span a global cap counts: a UTC day or a calendar month (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Day,
    Month,
}

/// One window of a global cap: where it starts and where the next one starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub period: Period,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

fn midnight(date: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0).unwrap_or_default())
}

impl Window {
    /// The window of `period` that `now` falls in.
    pub fn containing(period: Period, now: DateTime<Utc>) -> Window {
        let today = now.date_naive();
        let (start, end) = match period {
            Period::Day => (today, today + Duration::days(1)),
            Period::Month => {
                let first = today.with_day(1).unwrap_or(today);
                let next = first
                    .checked_add_months(chrono::Months::new(1))
                    .unwrap_or(first + Duration::days(31));
                (first, next)
            }
        };
        Window {
            period,
            start: midnight(start),
            end: midnight(end),
        }
    }

    /// The window's name, unique among windows: `day:2026-03-01`, `month:2026-03`.
    pub fn key(&self) -> String {
        match self.period {
            Period::Day => format!("day:{}", self.start.format("%Y-%m-%d")),
            Period::Month => format!("month:{}", self.start.format("%Y-%m")),
        }
    }

    /// The config key of this window's cap.
    pub fn setting(&self) -> &'static str {
        match self.period {
            Period::Day => "cron.budget.daily_usd",
            Period::Month => "cron.budget.monthly_usd",
        }
    }
}

/// The global caps of all cron runs together (`cron.budget`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GlobalCaps {
    pub daily_usd: Option<f64>,
    pub monthly_usd: Option<f64>,
}

impl GlobalCaps {
    /// The windows `now` falls in that have a cap, the month first (a spent month
    /// outlasts a spent day).
    pub fn windows(&self, now: DateTime<Utc>) -> Vec<(Window, f64)> {
        [
            (Period::Month, self.monthly_usd),
            (Period::Day, self.daily_usd),
        ]
        .into_iter()
        .filter_map(|(period, cap)| Some((Window::containing(period, now), cap?)))
        .collect()
    }
}

/// A global cap that is reached: agent runs wait until `window.end`.
#[derive(Debug, Clone, PartialEq)]
pub struct Exhausted {
    pub window: Window,
    pub cap_usd: f64,
    pub spent_usd: f64,
}

impl Exhausted {
    /// Why a run was not sent to the model, and until when.
    pub fn message(&self) -> String {
        let what = match self.window.period {
            Period::Day => "daily",
            Period::Month => "monthly",
        };
        format!(
            "{what} budget spent: {} of {} {} since {}; agent jobs wait until {} (script-only jobs still run; raise {} to resume sooner)",
            usd_text(self.spent_usd),
            self.window.setting(),
            usd_text(self.cap_usd),
            self.window.start.format("%Y-%m-%d %H:%M UTC"),
            self.window.end.format("%Y-%m-%d %H:%M UTC"),
            self.window.setting(),
        )
    }
}

/// The first window whose spend has reached its cap, of windows given with their cap
/// and what was spent in them; `None` while every one has room.
pub fn exhausted(spent: &[(Window, f64, f64)]) -> Option<Exhausted> {
    spent
        .iter()
        .find(|(_, cap, spent)| spent >= cap)
        .map(|(window, cap, spent)| Exhausted {
            window: *window,
            cap_usd: *cap,
            spent_usd: *spent,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::RunStatus;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn row(
        job: &str,
        model: &str,
        finished: &str,
        tokens: Option<i64>,
        cost: Option<f64>,
    ) -> RunRow {
        RunRow {
            id: 1,
            job_id: job.into(),
            occurrence: String::new(),
            source: "scheduler".into(),
            pid: None,
            host: None,
            status: RunStatus::Ok,
            scheduled_at: None,
            started_at: None,
            finished_at: Some(finished.into()),
            error: None,
            delivery: None,
            prompt_tokens: tokens,
            completion_tokens: tokens.map(|t| t / 2),
            cost_usd: cost,
            model: Some(model.into()),
            replay_of: None,
        }
    }

    #[test]
    fn windows_are_the_utc_day_and_the_calendar_month_and_reset_by_themselves() {
        let now = at("2026-12-31T23:59:59Z");
        let day = Window::containing(Period::Day, now);
        assert_eq!(
            (day.start, day.end),
            (at("2026-12-31T00:00:00Z"), at("2027-01-01T00:00:00Z"))
        );
        assert_eq!(day.key(), "day:2026-12-31");
        let month = Window::containing(Period::Month, now);
        assert_eq!(
            (month.start, month.end),
            (at("2026-12-01T00:00:00Z"), at("2027-01-01T00:00:00Z"))
        );
        assert_eq!(month.key(), "month:2026-12");
        let caps = GlobalCaps {
            daily_usd: Some(1.0),
            monthly_usd: Some(10.0),
        };
        let windows = caps.windows(now);
        assert_eq!(
            windows[0].0.period,
            Period::Month,
            "the month is looked at first"
        );
        let spent: Vec<_> = windows.iter().map(|(w, cap)| (*w, *cap, 1.0)).collect();
        let hit = exhausted(&spent).unwrap();
        assert_eq!(hit.window.period, Period::Day);
        assert!(hit.message().starts_with("daily budget spent: $1.00 of cron.budget.daily_usd $1.00 since 2026-12-31 00:00 UTC; agent jobs wait until 2027-01-01 00:00 UTC"), "{}", hit.message());
        assert_eq!(exhausted(&[(day, 1.0, 0.99)]), None);
    }

    #[test]
    fn rows_sum_per_job_and_model_and_regroup_per_job_or_model() {
        let rows = [
            row("a", "m1", "2026-03-01T10:00:00.000Z", Some(100), Some(0.5)),
            row("a", "m1", "2026-03-01T11:00:00.000Z", Some(100), Some(0.25)),
            row("a", "m2", "2026-03-01T11:00:00.000Z", Some(10), None),
            row("b", "m1", "2026-03-01T12:00:00.000Z", Some(40), Some(1.0)),
            row("b", "m1", "2026-02-28T12:00:00.000Z", Some(40), Some(9.0)),
            row("b", "m1", "2026-03-01T12:00:00.000Z", None, None),
        ];
        let spend = sum_rows(&rows, at("2026-03-01T00:00:00Z"));
        assert_eq!(spend.len(), 3);
        assert_eq!(total_cost(&spend), 1.75);
        let by_job = grouped(&spend, By::Job);
        assert_eq!(
            by_job[0].job_id.as_deref(),
            Some("b"),
            "the most expensive first"
        );
        assert_eq!(
            (
                by_job[1].runs,
                by_job[1].prompt_tokens,
                by_job[1].unpriced_runs
            ),
            (3, 210, 1)
        );
        let by_model = grouped(&spend, By::Model);
        assert_eq!(by_model[0].model, Some(Some("m1".into())));
        assert_eq!(by_model[0].cost_usd, Some(1.75));
        assert_eq!(by_model[1].cost_usd, None);
        let json = serde_json::to_value(&by_model[1]).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"model": "m2", "runs": 1, "prompt_tokens": 10, "completion_tokens": 5, "cost_usd": null, "unpriced_runs": 1})
        );
    }
}
