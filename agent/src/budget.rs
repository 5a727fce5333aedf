//! A run's own budget (docs/AGENT.md, "Budgets"): what its model requests have used so
//! far — requests, tokens, dollars — against the job's caps, checked before each request
//! so that a run stops before the request that would go on past a cap, never inside one.
//! Each request is priced by the model that answered it. It never calls a model and
//! never touches the store; the runtime cap is the scheduler's (it cancels from outside).

use jobs::caps::usd_text;
use jobs::{Caps, Job};

use super::inference::Endpoint;
use super::model_api::{Message, Usage};
use crate::config::Config;
use crate::pricing::{price_of, Price, Tokens};
use crate::runner::{BudgetCap, OverBudget, Progress, RunOutcome, RunResult, Spent};

/// What a run's model requests have used, and the job's caps on them.
#[derive(Debug, Clone, Default)]
pub struct Spend {
    caps: Caps,
    /// Each endpoint's model with its price (`None`: no known price).
    prices: Vec<(String, Option<Price>)>,
    /// Model requests answered.
    requests: u64,
    tokens: Tokens,
    /// Some request reported usage.
    reported: bool,
    /// Dollars of the requests priced so far.
    cost: f64,
    /// A request's usage could not be priced: the run's cost is unknown.
    unpriced: bool,
    /// The model that answered the last request.
    model: Option<String>,
}

impl Spend {
    /// The budget of a run of `job` on `endpoints` (the primary first, then the
    /// fallbacks). A job with `max_cost_usd` is refused, before any model request, when a
    /// model it may use has no price: its cost could not be counted.
    pub fn for_run(job: &Job, config: &Config, endpoints: &[Endpoint]) -> Result<Spend, String> {
        let caps = job.caps();
        let mut prices = Vec::new();
        for endpoint in endpoints {
            let price = match price_of(config, &endpoint.model) {
                Ok(price) => Some(price),
                Err(unpriced) if caps.max_cost_usd.is_some() => {
                    return Err(format!("max_cost_usd is set but {unpriced}"))
                }
                Err(_) => None,
            };
            prices.push((endpoint.model.clone(), price));
        }
        Ok(Spend {
            caps,
            prices,
            ..Spend::default()
        })
    }

    /// The model calls the loop plans for: `agent.max_turns`, or the job's `max_turns`
    /// when smaller (the wrap-up notices come at 70 % and 90 % of it).
    pub fn turn_budget(&self, configured: u32) -> u32 {
        self.caps
            .max_turns
            .and_then(|cap| u32::try_from(cap).ok())
            .map_or(configured, |cap| cap.min(configured))
    }

    /// Whether the next model request may go out: the error names the cap reached and
    /// the figure.
    pub fn check(&self) -> Result<(), String> {
        let next = self.requests + 1;
        let stop = |reached: String| {
            Err(format!(
                "{reached}: the run stopped before model request {next}"
            ))
        };
        if let Some(cap) = self.caps.max_turns.filter(|cap| self.requests >= *cap) {
            return stop(format!("max_turns {cap} reached"));
        }
        let used = self.tokens.prompt + self.tokens.completion;
        let reached = |cap: &u64| used >= i64::try_from(*cap).unwrap_or(i64::MAX);
        if let Some(cap) = self.caps.max_tokens.filter(reached) {
            return stop(format!("max_tokens: {used} tokens (cap {cap})"));
        }
        if let Some(cap) = self.caps.max_cost_usd.filter(|cap| self.cost >= *cap) {
            let model = self
                .model
                .as_deref()
                .map(|m| format!(", model {m}"))
                .unwrap_or_default();
            return stop(format!(
                "max_cost: {} spent (cap {}{model})",
                usd_text(self.cost),
                usd_text(cap)
            ));
        }
        Ok(())
    }

    /// A model request `model` answered, with the usage it reported.
    pub fn add(&mut self, model: &str, usage: Option<Usage>) {
        self.requests += 1;
        self.model = Some(model.to_string());
        let Some(usage) = usage else {
            return;
        };
        let tokens = Tokens {
            prompt: usage.prompt_tokens,
            completion: usage.completion_tokens,
            cache_read: usage.cache_read_tokens,
        };
        self.reported = true;
        self.tokens.prompt += tokens.prompt;
        self.tokens.completion += tokens.completion;
        self.tokens.cache_read += tokens.cache_read;
        let price = self
            .prices
            .iter()
            .find(|(priced, _)| priced == model)
            .and_then(|(_, price)| *price);
        match price {
            Some(price) => self.cost += price.cost(tokens),
            None => self.unpriced = true,
        }
    }

    /// What the run has spent so far: its tokens when some request reported usage, the
    /// model that answered last (else the primary), the cost when every usage was priced.
    pub fn spent(&self) -> Spent {
        let reported = self.reported;
        Spent {
            prompt_tokens: reported.then_some(self.tokens.prompt),
            completion_tokens: reported.then_some(self.tokens.completion),
            model: self
                .model
                .clone()
                .or_else(|| self.prices.first().map(|(model, _)| model.clone())),
            cost_usd: (reported && !self.unpriced).then_some(self.cost),
        }
    }

    /// The run's outcome with what it spent.
    pub fn outcome(&self, prompt: String, result: RunResult) -> RunOutcome {
        let mut outcome = RunOutcome::of(prompt, result).with_spent(self.spent());
        outcome.signals.model_calls = u32::try_from(self.requests).unwrap_or(u32::MAX);
        outcome
    }

    /// Model requests answered so far.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// The outcome of a run stopped at one of the job's caps: `error` says which, and
    /// the progress what it produced before.
    pub fn stopped(&self, prompt: String, error: String, progress: &Progress) -> RunOutcome {
        let stop = OverBudget {
            cap: BudgetCap::Job,
            error,
            so_far: progress.so_far().0,
        };
        self.outcome(prompt, RunResult::OverBudget(stop))
    }
}

/// One model turn as the run's progress keeps it: what the model wrote and the tools it
/// called (their results stay out: they can be long, and the next turn tells of them).
pub fn turn_text(message: &Message) -> Option<String> {
    let mut parts = Vec::new();
    let text = message.content.trim();
    if !text.is_empty() {
        parts.push(text.to_string());
    }
    for call in &message.tool_calls {
        parts.push(format!(
            "- called `{}` {}",
            call.name,
            call.arguments.trim()
        ));
    }
    (!parts.is_empty()).then(|| parts.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inference::ApiMode;

    fn endpoint(model: &str) -> Endpoint {
        Endpoint {
            provider: "custom".into(),
            model: model.into(),
            base_url: "http://127.0.0.1:1/v1".into(),
            api_key: None,
            missing_key: None,
            mode: ApiMode::ChatCompletions,
        }
    }

    fn job(caps: serde_json::Value) -> Job {
        let serde_json::Value::Object(record) = caps else {
            unreachable!()
        };
        Job::from_record(record)
    }

    fn usage(prompt: i64, completion: i64) -> Option<Usage> {
        Some(Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            cache_read_tokens: 0,
        })
    }

    #[test]
    fn each_cap_stops_before_the_request_after_the_one_that_reached_it() {
        let config = Config::default();
        let endpoints = [endpoint("gpt-4o-mini")];
        let mut turns = Spend::for_run(
            &job(serde_json::json!({"max_turns": 2})),
            &config,
            &endpoints,
        )
        .unwrap();
        for _ in 0..2 {
            assert_eq!(turns.check(), Ok(()));
            turns.add("gpt-4o-mini", usage(10, 1));
        }
        assert_eq!(
            turns.check(),
            Err("max_turns 2 reached: the run stopped before model request 3".into())
        );
        let mut tokens = Spend::for_run(
            &job(serde_json::json!({"max_tokens": 1000})),
            &config,
            &endpoints,
        )
        .unwrap();
        tokens.add("gpt-4o-mini", usage(500, 100));
        assert_eq!(tokens.check(), Ok(()));
        tokens.add("gpt-4o-mini", usage(500, 100));
        assert_eq!(
            tokens.check(),
            Err(
                "max_tokens: 1200 tokens (cap 1000): the run stopped before model request 3".into()
            )
        );
        let mut cost = Spend::for_run(
            &job(serde_json::json!({"max_cost_usd": 0.001})),
            &config,
            &endpoints,
        )
        .unwrap();
        cost.add("gpt-4o-mini", usage(4000, 0));
        assert_eq!(cost.check(), Ok(()), "$0.0006 spent");
        cost.add("gpt-4o-mini", usage(4000, 0));
        assert!(cost
            .check()
            .unwrap_err()
            .starts_with("max_cost: $0.0012 spent (cap $0.001, model gpt-4o-mini)"));
        let outcome = cost.outcome(String::new(), RunResult::Reply("x".into()));
        assert_eq!(
            (outcome.prompt_tokens, outcome.completion_tokens),
            (Some(8000), Some(0))
        );
        assert!((outcome.cost_usd.unwrap() - 0.0012).abs() < 1e-12);
        assert_eq!(turns.turn_budget(90), 2);
        assert_eq!(tokens.turn_budget(90), 90);
    }

    #[test]
    fn an_unpriced_model_is_refused_only_with_a_cost_cap_and_leaves_the_cost_unknown() {
        let config = Config::default();
        let endpoints = [endpoint("gpt-4o-mini"), endpoint("qwen-local")];
        let refused = Spend::for_run(
            &job(serde_json::json!({"max_cost_usd": 1})),
            &config,
            &endpoints,
        )
        .unwrap_err();
        assert!(refused.starts_with("max_cost_usd is set but model 'qwen-local' has no known price: add it under pricing: in config.yaml"), "{refused}");
        let mut spend = Spend::for_run(&job(serde_json::json!({})), &config, &endpoints).unwrap();
        spend.add("qwen-local", usage(10, 10));
        let outcome = spend.outcome(String::new(), RunResult::Reply("x".into()));
        assert_eq!(outcome.cost_usd, None);
        assert_eq!(outcome.model.as_deref(), Some("qwen-local"));
        let none = Spend::for_run(&job(serde_json::json!({})), &config, &endpoints).unwrap();
        let outcome = none.outcome(String::new(), RunResult::Failed("x".into()));
        assert_eq!((outcome.cost_usd, outcome.prompt_tokens), (None, None));
        assert_eq!(outcome.model.as_deref(), Some("gpt-4o-mini"));
    }
}
