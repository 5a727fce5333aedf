//! How one hand-written value of config.yaml is read: each type says what it accepts in
//! each form a YAML value can take (scalar, sequence, mapping) and refuses the others with
//! "expected <what>, got <what was written>", raised while the YAML reader still stands on
//! the value so the error carries the value's own line. Sections are read by their derived
//! `Deserialize`, given only the keys they use. It never decides defaults.
//!
//! The value readers stay hand-written: serde's own forms (`#[serde(untagged)]`, `flatten`)
//! buffer the value first, which loses its line and turns every refusal into "did not
//! match any variant".

use std::marker::PhantomData;

use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_yaml_ng::{Mapping, Value};

use super::{
    AgentCommand, AgentSection, ApprovalsSection, BudgetSection, CodeExecutionSection, Config,
    CronApproval, CronDeliverySection, CronSection, DeliverySection, FallbackProvider, McpServer,
    McpToolFilter, ModelPrice, ModelSection, Seconds, ToolsSection, Usd, WebFetchSection,
};

/// Reads one value in the forms its type accepts: the `deserialize_with` of every key.
pub(super) fn read<'de, D: Deserializer<'de>, T: FromYaml>(deserializer: D) -> Result<T, D::Error> {
    deserializer.deserialize_any(seed::<T>())
}

/// `args`: texts kept exactly as written, unlike the names of `Vec<String>`.
pub(super) fn arguments<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<String>, D::Error> {
    read(deserializer).map(|Arguments(args)| args)
}

/// A value the type its key needs cannot be read from; the reason of
/// `ConfigError::WrongValue`.
#[derive(Debug, thiserror::Error)]
#[error("expected {wanted}, got {got}")]
pub(super) struct Refusal {
    /// What the key holds: "a whole number".
    wanted: &'static str,
    /// What was written, as `Scalar::shown` or "a sequence".
    got: String,
}

fn refuse(wanted: &'static str, got: impl Into<String>) -> Refusal {
    Refusal {
        wanted,
        got: got.into(),
    }
}

/// A scalar as written, before it is read as the type its key needs.
#[derive(Debug, Clone, Copy)]
pub(super) enum Scalar<'a> {
    Bool(bool),
    Int(i128),
    Float(f64),
    Text(&'a str),
}

impl Scalar<'_> {
    /// How the value is shown in a refusal (text cut short: it might be pasted secrets).
    fn shown(&self) -> String {
        match self {
            Scalar::Bool(b) => b.to_string(),
            Scalar::Int(n) => n.to_string(),
            Scalar::Float(x) => x.to_string(),
            Scalar::Text(s) if s.chars().count() > 40 => {
                format!(
                    "{:?}",
                    format!("{}...", s.chars().take(40).collect::<String>())
                )
            }
            Scalar::Text(s) => format!("{s:?}"),
        }
    }
}

/// A type read from one YAML value; each method refuses its form unless overridden.
pub(super) trait FromYaml: Sized + Default {
    /// What the key holds, for messages: "a whole number".
    const WANTED: &'static str;

    /// An empty value (`~`, or nothing after the colon): not set, an empty list or an
    /// empty section.
    fn from_null() -> Result<Self, Refusal> {
        Ok(Self::default())
    }

    fn from_scalar(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        Err(refuse(Self::WANTED, scalar.shown()))
    }

    fn from_seq<'de, A: SeqAccess<'de>>(_seq: A) -> Result<Self, A::Error> {
        Err(de::Error::custom(refuse(Self::WANTED, "a sequence")))
    }

    fn from_map<'de, A: MapAccess<'de>>(_map: A) -> Result<Self, A::Error> {
        Err(de::Error::custom(refuse(Self::WANTED, "a mapping")))
    }
}

/// Reads a `T` from the next value: a seed for `next_value_seed` / `next_element_seed`,
/// and the visitor that sees the value as YAML wrote it.
struct Read<T>(PhantomData<T>);

fn seed<T>() -> Read<T> {
    Read(PhantomData)
}

impl<'de, T: FromYaml> DeserializeSeed<'de> for Read<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, T: FromYaml> Visitor<'de> for Read<T> {
    type Value = T;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(T::WANTED)
    }

    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        T::from_null().map_err(E::custom)
    }

    fn visit_none<E: de::Error>(self) -> Result<T, E> {
        T::from_null().map_err(E::custom)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        T::from_scalar(Scalar::Bool(v)).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        T::from_scalar(Scalar::Int(v.into())).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        T::from_scalar(Scalar::Int(v.into())).map_err(E::custom)
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<T, E> {
        T::from_scalar(Scalar::Int(v)).map_err(E::custom)
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<T, E> {
        let scalar = i128::try_from(v).map_or(Scalar::Float(v as f64), Scalar::Int);
        T::from_scalar(scalar).map_err(E::custom)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        T::from_scalar(Scalar::Float(v)).map_err(E::custom)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        T::from_scalar(Scalar::Text(v)).map_err(E::custom)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::from_seq(seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::from_map(map)
    }

    fn visit_enum<A: EnumAccess<'de>>(self, _data: A) -> Result<T, A::Error> {
        Err(de::Error::custom(refuse(T::WANTED, "a tagged value")))
    }
}

/// Every element of a sequence, each read as a `T`.
fn elements<'de, T: FromYaml, A: SeqAccess<'de>>(mut seq: A) -> Result<Vec<T>, A::Error> {
    let mut items = Vec::new();
    while let Some(item) = seq.next_element_seed(seed::<T>())? {
        items.push(item);
    }
    Ok(items)
}

/// Text: numbers are read as their digits; blank is not set.
impl FromYaml for Option<String> {
    const WANTED: &'static str = "a text value";

    fn from_scalar(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        match scalar {
            Scalar::Text(s) => Ok(Some(s.trim().to_string()).filter(|s| !s.is_empty())),
            Scalar::Int(n) => Ok(Some(n.to_string())),
            Scalar::Float(x) => Ok(Some(x.to_string())),
            Scalar::Bool(_) => Err(refuse(Self::WANTED, scalar.shown())),
        }
    }
}

/// A whole number, also written as text ("4"); blank is not set.
impl FromYaml for Option<u64> {
    const WANTED: &'static str = "a whole number";

    fn from_scalar(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        let refused = || refuse(Self::WANTED, scalar.shown());
        match scalar {
            Scalar::Int(n) => u64::try_from(n).map(Some).map_err(|_| refused()),
            Scalar::Text(s) if s.trim().is_empty() => Ok(None),
            Scalar::Text(s) => s.trim().parse().map(Some).map_err(|_| refused()),
            Scalar::Bool(_) | Scalar::Float(_) => Err(refused()),
        }
    }
}

/// A number, whole or not, also written as text ("6", "0.5"); blank is not set.
impl FromYaml for Option<f64> {
    const WANTED: &'static str = "a number";

    fn from_scalar(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        let refused = || refuse(Self::WANTED, scalar.shown());
        let number = match scalar {
            Scalar::Text(s) if s.trim().is_empty() => return Ok(None),
            Scalar::Text(s) => s.trim().parse::<f64>().map_err(|_| refused())?,
            Scalar::Int(n) => n as f64,
            Scalar::Float(x) => x,
            Scalar::Bool(_) => return Err(refused()),
        };
        number
            .is_finite()
            .then_some(Some(number))
            .ok_or_else(refused)
    }
}

/// true/false, also written as text: true, yes, on, false, no, off (any case).
impl FromYaml for Option<bool> {
    const WANTED: &'static str = "true or false";

    fn from_scalar(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        match scalar {
            Scalar::Bool(b) => Ok(Some(b)),
            Scalar::Text(s) => match s.trim().to_ascii_lowercase().as_str() {
                "" => Ok(None),
                "true" | "yes" | "on" => Ok(Some(true)),
                "false" | "no" | "off" => Ok(Some(false)),
                _ => Err(refuse(Self::WANTED, scalar.shown())),
            },
            Scalar::Int(_) | Scalar::Float(_) => Err(refuse(Self::WANTED, scalar.shown())),
        }
    }
}

/// Names: a list, or one comma-separated text. Blank entries are dropped.
impl FromYaml for Vec<String> {
    const WANTED: &'static str = "a list of names";

    fn from_scalar(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        match scalar {
            Scalar::Text(s) => Ok(s
                .split(',')
                .map(|p| p.trim().to_string())
                .filter(|p| !p.is_empty())
                .collect()),
            _ => Err(refuse(Self::WANTED, scalar.shown())),
        }
    }

    fn from_seq<'de, A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        let names = elements::<Option<String>, _>(seq)?;
        Ok(names.into_iter().flatten().collect())
    }
}

impl FromYaml for Option<AgentCommand> {
    const WANTED: &'static str = "a command line, or a list of the program and its arguments";

    fn from_scalar(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        match scalar {
            Scalar::Text(s) if s.trim().is_empty() => Ok(None),
            Scalar::Text(s) => Ok(Some(AgentCommand::Shell(s.to_string()))),
            _ => Err(refuse(Self::WANTED, scalar.shown())),
        }
    }

    fn from_seq<'de, A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        let argv = Vec::<String>::from_seq(seq)?;
        Ok((!argv.is_empty()).then_some(AgentCommand::Argv(argv)))
    }
}

impl FromYaml for Option<CronApproval> {
    const WANTED: &'static str = "approve or deny";

    fn from_scalar(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        Ok(match scalar {
            Scalar::Text(s) if s.trim().is_empty() => None,
            Scalar::Text(s)
                if matches!(s.trim().to_ascii_lowercase().as_str(), "approve" | "allow") =>
            {
                Some(CronApproval::Approve)
            }
            _ => Some(CronApproval::Deny),
        })
    }
}

impl FromYaml for Option<Seconds> {
    const WANTED: &'static str = "a number of seconds greater than 0";

    fn from_scalar(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        match <Option<f64>>::from_scalar(scalar) {
            Ok(None) => Ok(None),
            Ok(Some(seconds)) if seconds > 0.0 => Ok(Some(Seconds(seconds))),
            _ => Err(refuse(Self::WANTED, scalar.shown())),
        }
    }
}

impl FromYaml for Option<Usd> {
    const WANTED: &'static str = "an amount of US dollars, 0 or more (e.g. 0.15)";

    fn from_scalar(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        let number = match scalar {
            Scalar::Text(s) => Scalar::Text(s.trim().trim_start_matches('$')),
            other => other,
        };
        match <Option<f64>>::from_scalar(number) {
            Ok(None) => Ok(None),
            Ok(Some(usd)) if usd >= 0.0 => Ok(Some(Usd(usd))),
            _ => Err(refuse(Self::WANTED, scalar.shown())),
        }
    }
}

/// `pricing`: a mapping from model names to prices, kept as a list in the file's order
/// with the name inside each price.
impl FromYaml for Vec<ModelPrice> {
    const WANTED: &'static str = "a mapping of model names to their prices";

    fn from_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut prices = Vec::new();
        while let Some(name) = map.next_key::<Value>()? {
            let model = name_of(name, "a model name")?;
            let mut price = map.next_value_seed(seed::<ModelPrice>())?;
            price.model = model;
            prices.push(price);
        }
        Ok(prices)
    }
}

impl FromYaml for Vec<FallbackProvider> {
    const WANTED: &'static str = "a list of providers (each a mapping with provider and model)";

    fn from_seq<'de, A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        elements(seq)
    }
}

/// One text exactly as written (an argument may be blank or start with a space); numbers
/// are read as their digits, and empty is refused.
fn verbatim_text(scalar: Scalar<'_>, wanted: &'static str) -> Result<String, Refusal> {
    match scalar {
        Scalar::Text(s) => Ok(s.to_string()),
        Scalar::Int(n) => Ok(n.to_string()),
        Scalar::Float(x) => Ok(x.to_string()),
        Scalar::Bool(_) => Err(refuse(wanted, scalar.shown())),
    }
}

/// An element of `args`.
#[derive(Default)]
struct Argument(String);

impl FromYaml for Argument {
    const WANTED: &'static str = "a text argument";

    fn from_scalar(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        verbatim_text(scalar, Self::WANTED).map(Argument)
    }

    fn from_null() -> Result<Self, Refusal> {
        Err(refuse(Self::WANTED, "nothing"))
    }
}

/// `args`: a list of texts, kept as written.
#[derive(Default)]
struct Arguments(Vec<String>);

impl FromYaml for Arguments {
    const WANTED: &'static str = "a list of arguments, e.g. [\"-y\", \"server\"]";

    fn from_seq<'de, A: SeqAccess<'de>>(seq: A) -> Result<Self, A::Error> {
        let args = elements(seq)?.into_iter().map(|Argument(arg)| arg);
        Ok(Arguments(args.collect()))
    }
}

/// A value of `env` or `headers`.
#[derive(Default)]
struct NamedText(String);

impl FromYaml for NamedText {
    const WANTED: &'static str = "a text value";

    fn from_scalar(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        verbatim_text(scalar, Self::WANTED).map(NamedText)
    }

    fn from_null() -> Result<Self, Refusal> {
        Err(refuse(Self::WANTED, "nothing"))
    }
}

/// A key that names something (a variable, a header, a server): text, or a number read
/// as its digits.
fn name_of<E: de::Error>(key: Value, wanted: &'static str) -> Result<String, E> {
    match key {
        Value::String(s) => Ok(s),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(E::custom(refuse(wanted, format!("{other:?}")))),
    }
}

/// `env` and `headers`: names with text values, in the file's order.
impl FromYaml for Vec<(String, String)> {
    const WANTED: &'static str = "a mapping of names to text values";

    fn from_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut pairs = Vec::new();
        while let Some(name) = map.next_key::<Value>()? {
            let name = name_of(name, "a name")?;
            let NamedText(value) = map.next_value_seed(seed::<NamedText>())?;
            pairs.push((name, value));
        }
        Ok(pairs)
    }
}

/// `mcp_servers`: a mapping from names to servers, kept as a list in the file's order
/// with the name inside each server.
impl FromYaml for Vec<McpServer> {
    const WANTED: &'static str = "a mapping of MCP server names to their settings";

    fn from_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        let mut servers = Vec::new();
        while let Some(name) = map.next_key::<Value>()? {
            let name = name_of(name, "a server name")?;
            let mut server = map.next_value_seed(seed::<McpServer>())?;
            server.name = name;
            servers.push(server);
        }
        Ok(servers)
    }
}

// ---------------------------------------------------------------------------------------
// Sections: the derived readers above, given a mapping with only the keys they use.

/// A mapping of settings: the keys it uses are read by its derived `Deserialize`, every
/// other key is kept as written in `extra`. Empty (`cron:` with nothing under it) is an
/// empty section.
trait Section: Default + for<'de> Deserialize<'de> {
    const WANTED: &'static str;

    fn extra_mut(&mut self) -> &mut Mapping;

    /// A section written as a scalar other than empty: refused.
    fn from_plain(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        Err(refuse(Self::WANTED, scalar.shown()))
    }
}

impl<S: Section> FromYaml for S {
    const WANTED: &'static str = S::WANTED;

    fn from_scalar(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        S::from_plain(scalar)
    }

    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        let mut extra = Mapping::new();
        let mut section = S::deserialize(SectionBody {
            map,
            extra: &mut extra,
        })?;
        *section.extra_mut() = extra;
        Ok(section)
    }
}

/// A section's mapping as its derived reader asks for it: as a struct, which names the
/// keys it uses.
struct SectionBody<'a, A> {
    map: A,
    extra: &'a mut Mapping,
}

impl<'de, A: MapAccess<'de>> Deserializer<'de> for SectionBody<'_, A> {
    type Error = A::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        used: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        visitor.visit_map(UsedKeys {
            map: self.map,
            used,
            extra: self.extra,
        })
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, A::Error> {
        self.deserialize_struct("", &[], visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

/// The mapping with only the keys in `used`; every other key, with its value as written,
/// goes into `extra` on the way. The values are read from the YAML itself, so an error
/// still carries its line.
struct UsedKeys<'a, A> {
    map: A,
    used: &'static [&'static str],
    extra: &'a mut Mapping,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for UsedKeys<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        while let Some(key) = self.map.next_key::<Value>()? {
            if let Some(name) = key.as_str().filter(|name| self.used.contains(name)) {
                return seed.deserialize(StrDeserializer::new(name)).map(Some);
            }
            let value = self.map.next_value()?;
            self.extra.insert(key, value);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

/// What each section is called when it is refused.
macro_rules! sections {
    ($($section:ty => $wanted:literal,)*) => {$(
        impl Section for $section {
            const WANTED: &'static str = $wanted;

            fn extra_mut(&mut self) -> &mut Mapping {
                &mut self.extra
            }
        }
    )*};
}

sections! {
    Config => "a mapping of settings (one 'key: value' per line)",
    FallbackProvider => "a mapping with provider, model, base_url and api_key_env",
    AgentSection => "a mapping of agent settings",
    CronSection => "a mapping of cron settings",
    CronDeliverySection => "a mapping of cron delivery settings",
    ToolsSection => "a mapping of tool settings",
    WebFetchSection => "a mapping of web_fetch settings",
    DeliverySection => "a mapping of delivery settings",
    ApprovalsSection => "a mapping of approval settings",
    CodeExecutionSection => "a mapping of code_execution settings",
    BudgetSection => "a mapping with daily_usd, monthly_usd and notify",
    ModelPrice => "a mapping with input_per_mtok, output_per_mtok and cache_read_per_mtok (US dollars per million tokens)",
    McpServer => "a mapping with command, args and env (stdio) or url and headers (HTTP)",
    McpToolFilter => "a mapping with include or exclude (lists of tool names)",
}

impl Section for ModelSection {
    const WANTED: &'static str =
        "a model name, or a mapping with default, provider, base_url and api_key";

    fn extra_mut(&mut self) -> &mut Mapping {
        &mut self.extra
    }

    /// `model: some-model` is the default model.
    fn from_plain(scalar: Scalar<'_>) -> Result<Self, Refusal> {
        let default = Option::<String>::from_scalar(scalar)
            .map_err(|_| refuse(<Self as Section>::WANTED, scalar.shown()))?;
        Ok(ModelSection {
            default,
            ..ModelSection::default()
        })
    }
}
