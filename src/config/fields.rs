//! The values of experiment files, one type per kind of value. Each reads one TOML value,
//! refuses a bad one with the value as shown and a reason (`Bad`, which `resolve` places at the
//! value's dotted key), and writes itself back in its canonical form (`render`). What a value
//! means beside others (a TTL the policy refuses, a retention the contract lacks) is checked by
//! its section's `validate`.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml::Value;

use super::dist_syntax::{dist_label, parse_dist_in};
use super::error::Bad;
use super::experiment::{Answer, BlockKind, Strategy};
use super::latency_presets::LatencyPreset;
use super::names::{kind_label, parse_kind, parse_strategy, strategy_label};
use super::server::{Router, Sharing};
use super::AgentKind;
use crate::cache::{CacheKeyMode, GeminiMode, OpenAiContract, Policy, ThinkingHistory, Ttl};
use crate::dist::{Dist, Quantity};
use crate::time::{exact_duration, parse_duration_us, US_PER_H, US_PER_MIN};

/// Most tokens a token-valued key may hold (`workload.parent_tokens`, a token distribution's
/// parameters, ...): 500 times the largest context window offered (2M tokens).
pub const MAX_TOKENS: u64 = 1_000_000_000;
/// Most USD per million tokens a price may be (the dearest model lists $75).
pub const MAX_PRICE_USD_PER_MTOK: u64 = 1_000_000;
/// Most a price multiplier may be (the API's are 0.1, 1.25 and 2; long context 2 and 1.5).
pub const MAX_MULTIPLIER: u64 = 1_000;
/// Most USD per GPU-hour `server.gpu_usd_per_hour` may be (an H100 rents for about $2.50):
/// the longest run's GPU time (2^64 us) at this price is a finite, exact-enough cost.
pub const MAX_GPU_USD_PER_HOUR: u64 = 1_000_000;

/// A value type of experiment files (`$t`, holding a `$inner`): read from one TOML value by
/// its `read`, written back as `$write` of the value.
macro_rules! toml_value {
    ($($t:ident $(<const $c:ident: $ct:ty>)? => $inner:ty, $write:expr;)*) => {$(
        impl<'de $(, const $c: $ct)?> Deserialize<'de> for $t$(<$c>)? {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                Self::read(Value::deserialize(d)?).map_err(serde::de::Error::custom)
            }
        }
        impl $(<const $c: $ct>)? Serialize for $t$(<$c>)? {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let write: fn(&$t$(<$c>)?) -> Value = $write;
                write(self).serialize(s)
            }
        }
        impl $(<const $c: $ct>)? From<$t$(<$c>)?> for $inner {
            fn from(x: $t$(<$c>)?) -> $inner {
                x.0
            }
        }
    )*};
}

toml_value! {
    Int<const MIN: u64> => u64, |x| int(x.0);
    Count<const MIN: u64> => u32, |x| x.0.into();
    Tokens => u64, |x| int(x.0);
    Num => f64, |x| x.0.into();
    AtMost<const MAX: u64> => f64, |x| x.0.into();
    Share => f64, |x| x.0.into();
    Duration => u64, |x| exact_duration(x.0).into();
    DistOf<const Q: u8> => Dist, |x| dist_label(&x.0, Self::QUANTITY).into();
    TokenDist => Dist, |x| dist_label(&x.0, Quantity::Number).into();
    TtlText => Ttl, |x| x.0.duration_name().into();
    Blocks => Vec<BlockKind>, |x| Value::Array(x.0.iter().map(|b| b.name().into()).collect());
    Strategies => Vec<Strategy>, |x| x.0.iter().map(strategy_label).collect::<Vec<_>>().into();
    Kind => AgentKind, |x| kind_label(&x.0).into();
}

/// An optional key's value, or `default` when the key is absent.
pub trait GetOr<T> {
    fn get_or(self, default: T) -> T;
}

impl<F: Into<T>, T> GetOr<T> for Option<F> {
    fn get_or(self, default: T) -> T {
        self.map_or(default, Into::into)
    }
}

/// Whole TOML integers: at most `i64::MAX` (a larger value is written as that).
fn int(x: u64) -> Value {
    Value::Integer(i64::try_from(x).unwrap_or(i64::MAX))
}

fn string(v: Value) -> Result<String, Bad> {
    match v {
        Value::String(s) => Ok(s),
        v => Err(Bad::new(v, "expected a string")),
    }
}

/// An integer of at least `MIN`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Int<const MIN: u64>(pub u64);

impl<const MIN: u64> Int<MIN> {
    fn read(v: Value) -> Result<Self, Bad> {
        match v.as_integer().and_then(|i| u64::try_from(i).ok()) {
            Some(i) if i >= MIN => Ok(Int(i)),
            _ => Err(Bad::new(v, format!("expected an integer >= {MIN}"))),
        }
    }
}

/// An integer of at least `MIN` that fits a `u32` (agents, replications, ...).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Count<const MIN: u64>(pub u32);

impl<const MIN: u64> Count<MIN> {
    fn read(v: Value) -> Result<Self, Bad> {
        let Int(i) = Int::<MIN>::read(v)?;
        u32::try_from(i).map(Count).map_err(|_| Bad::new(i, "too large"))
    }
}

/// A token count: at most `MAX_TOKENS`, so that sums over a run stay exact.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tokens(pub u64);

impl Tokens {
    fn read(v: Value) -> Result<Self, Bad> {
        match Int::<0>::read(v)? {
            Int(i) if i > MAX_TOKENS => {
                Err(Bad::new(i, format!("at most {MAX_TOKENS} tokens (docs/limits.md)")))
            }
            Int(i) => Ok(Tokens(i)),
        }
    }
}

/// A finite number >= 0 (an integer is read as one).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Num(pub f64);

impl Num {
    fn read(v: Value) -> Result<Self, Bad> {
        let x = match v {
            Value::Float(x) => x,
            Value::Integer(i) => i as f64,
            v => return Err(Bad::new(v, "expected a number")),
        };
        if !x.is_finite() || x < 0.0 {
            return Err(Bad::new(x, "expected a finite number >= 0"));
        }
        Ok(Num(x))
    }
}

/// A number of at most `MAX` (prices and multipliers: a run's cost stays finite and exact
/// enough, docs/limits.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AtMost<const MAX: u64>(pub f64);

impl<const MAX: u64> AtMost<MAX> {
    fn read(v: Value) -> Result<Self, Bad> {
        let Num(x) = Num::read(v)?;
        if x > MAX as f64 {
            let shown = if x < 1e16 { x.to_string() } else { format!("{x:e}") };
            return Err(Bad::new(shown, format!("at most {:e} (docs/limits.md)", MAX as f64)));
        }
        Ok(AtMost(x))
    }
}

/// A share or probability, in [0, 1].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share(pub f64);

impl Share {
    fn read(v: Value) -> Result<Self, Bad> {
        match Num::read(v)? {
            Num(x) if x > 1.0 => Err(Bad::new(x, "a share or probability is at most 1")),
            Num(x) => Ok(Share(x)),
        }
    }
}

/// A duration with a unit (`"5s"`), in microseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Duration(pub u64);

impl Duration {
    fn read(v: Value) -> Result<Self, Bad> {
        match v {
            Value::String(s) => {
                parse_duration_us(&s).map(Duration).map_err(|e| Bad::quoted(&s, e.to_string()))
            }
            v => Err(Bad::new(v, "a duration is a string with a unit, e.g. \"5s\"")),
        }
    }
}

/// `DistOf`'s quantities (a const parameter).
pub const DURATION: u8 = 0;
pub const NUMBER: u8 = 1;
pub const RATE: u8 = 2;

/// A distribution of quantity `Q` (`DURATION`, `NUMBER`, `RATE`): its text, or a plain number
/// for a `NUMBER`.
#[derive(Debug, Clone, PartialEq)]
pub struct DistOf<const Q: u8>(pub Dist);

impl<const Q: u8> DistOf<Q> {
    const QUANTITY: Quantity = match Q {
        DURATION => Quantity::Duration,
        NUMBER => Quantity::Number,
        _ => Quantity::Rate,
    };

    fn read(v: Value) -> Result<Self, Bad> {
        let q = Self::QUANTITY;
        let text = match v {
            Value::String(s) => s,
            Value::Integer(i) if q != Quantity::Duration => i.to_string(),
            Value::Float(x) if q != Quantity::Duration => x.to_string(),
            v if q == Quantity::Duration => {
                return Err(Bad::new(v, "a duration needs a unit, e.g. \"2s\" or \"const(2s)\""))
            }
            v => return Err(Bad::new(v, "expected a distribution string")),
        };
        parse_dist_cached(&text, q).map(DistOf).map_err(|e| Bad::quoted(&text, e.to_string()))
    }
}

/// A distribution of token counts: its parameters at most `MAX_TOKENS`.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenDist(pub Dist);

impl TokenDist {
    fn read(v: Value) -> Result<Self, Bad> {
        let DistOf(d) = DistOf::<NUMBER>::read(v)?;
        if param_max(&d) > MAX_TOKENS as f64 {
            let why = format!("parameters of at most {MAX_TOKENS} tokens (docs/limits.md)");
            return Err(Bad::quoted(&dist_label(&d, Quantity::Number), why));
        }
        Ok(TokenDist(d))
    }
}

/// The largest of the parameters of `d` that carry its unit.
fn param_max(d: &Dist) -> f64 {
    match d {
        Dist::Const(x) => *x,
        Dist::Uniform { low, high } => low.max(*high),
        Dist::Normal { mean, sd } => mean.max(*sd),
        Dist::LogNormal { median, p90 } => median.max(*p90),
        Dist::Exp { mean } => *mean,
        Dist::Empirical(v) => v.iter().copied().fold(0.0, f64::max),
        Dist::Spliced(s) => s.max.max(s.scale),
    }
}

thread_local! {
    /// The directory of the file being resolved: `empirical(file=...)` paths are relative to
    /// it (`resolve` sets it for the time it reads a table).
    static BASE_DIR: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
    /// Distributions already parsed on this thread, by quantity and text: a sweep resolves its
    /// experiment once per axis value, with the same distribution texts each time.
    static PARSED: RefCell<Vec<(Quantity, String, Dist)>> = const { RefCell::new(Vec::new()) };
}

/// Most distributions `PARSED` keeps (an experiment has about a dozen).
const PARSED_MAX: usize = 64;

/// Run `f` with `empirical(file=...)` paths relative to `dir`.
pub fn with_base_dir<T>(dir: Option<&Path>, f: impl FnOnce() -> T) -> T {
    let old = BASE_DIR.replace(dir.map(Path::to_path_buf));
    let out = f();
    BASE_DIR.set(old);
    out
}

/// `parse_dist_in`, remembered: a text that reads no file always parses to the same value, so
/// a text seen before is not parsed again. `empirical` is always parsed (a positional argument
/// that is not a list is a file name, relative to the base directory), and errors are not kept.
fn parse_dist_cached(text: &str, q: Quantity) -> Result<Dist, super::DistError> {
    if text.contains("empirical") {
        return BASE_DIR.with_borrow(|base| parse_dist_in(text, q, base.as_deref()));
    }
    let seen = PARSED.with_borrow(|p| {
        p.iter().find(|(pq, t, _)| *pq == q && t == text).map(|(_, _, d)| d.clone())
    });
    if let Some(d) = seen {
        return Ok(d);
    }
    let d = parse_dist_in(text, q, None)?;
    PARSED.with_borrow_mut(|p| {
        if p.len() >= PARSED_MAX {
            p.clear();
        }
        p.push((q, text.to_string(), d.clone()));
    });
    Ok(d)
}

/// A TTL: `"5m"` (or any spelling of 5 minutes), `"1h"`, `"none"`, or another positive
/// duration (which `validate` holds to the policy), with the text as written.
#[derive(Debug, Clone, PartialEq)]
pub struct TtlText(pub Ttl, pub String);

impl TtlText {
    fn read(v: Value) -> Result<Self, Bad> {
        let t = string(v)?;
        let ttl = match t.as_str() {
            "none" => Ttl::None,
            _ => match parse_duration_us(&t) {
                Ok(us) if us == 5 * US_PER_MIN => Ttl::FiveMin,
                Ok(us) if us == US_PER_H => Ttl::OneHour,
                Ok(0) => {
                    let reason = "a zero TTL caches nothing (\"none\" is the TTL that never ends)";
                    return Err(Bad::quoted(&t, reason));
                }
                Ok(us) => Ttl::Other(us),
                Err(e) => return Err(Bad::quoted(&t, e.to_string())),
            },
        };
        Ok(TtlText(ttl, t))
    }

    pub fn of(ttl: Ttl) -> TtlText {
        TtlText(ttl, ttl.duration_name())
    }
}

/// A turn shape: block kinds in the order user, thinking, text, tool_use, tool_result (each at
/// most once), at least one of text and tool_use, tool_result only after tool_use.
#[derive(Debug, Clone, PartialEq)]
pub struct Blocks(pub Vec<BlockKind>);

impl Blocks {
    fn read(v: Value) -> Result<Self, Bad> {
        let bad = |why: &str| Bad::new(&v, why);
        let items = v.as_array().ok_or_else(|| bad("expected a list of block kinds"))?;
        let mut out: Vec<BlockKind> = Vec::with_capacity(items.len());
        for item in items {
            let name = item.as_str().ok_or_else(|| bad("expected strings"))?;
            let kind = BlockKind::ALL.into_iter().find(|k| k.name() == name).ok_or_else(|| {
                bad(&format!(
                    "unknown block kind `{name}` (use user, thinking, text, tool_use, tool_result)"
                ))
            })?;
            if out.last().is_some_and(|&last| last >= kind) {
                return Err(bad("list each kind at most once, in the order user, thinking, text, tool_use, tool_result"));
            }
            out.push(kind);
        }
        if !out.iter().any(|k| matches!(k, BlockKind::Text | BlockKind::ToolUse)) {
            return Err(bad("a turn needs assistant text or tool_use"));
        }
        if out.contains(&BlockKind::ToolResult) && !out.contains(&BlockKind::ToolUse) {
            return Err(bad("a tool_result answers a tool_use"));
        }
        Ok(Blocks(out))
    }
}

/// The launch strategies compared: at least one, none twice.
#[derive(Debug, Clone, PartialEq)]
pub struct Strategies(pub Vec<Strategy>);

impl Strategies {
    fn read(v: Value) -> Result<Self, Bad> {
        let items = v.as_array().ok_or_else(|| Bad::new(&v, "expected a list of strings"))?;
        if items.is_empty() {
            return Err(Bad::new(&v, "name at least one strategy"));
        }
        let mut out: Vec<Strategy> = Vec::with_capacity(items.len());
        for item in items {
            let text = item.as_str().ok_or_else(|| Bad::new(item, "expected a string"))?;
            let s = parse_strategy(text).map_err(|e| Bad::quoted(text, e.to_string()))?;
            if out.iter().any(|o| strategy_label(o) == strategy_label(&s)) {
                return Err(Bad::quoted(text, "listed twice"));
            }
            out.push(s);
        }
        Ok(Strategies(out))
    }
}

/// An agent kind (`fork_drop_tool(tool=Bash)`).
#[derive(Debug, Clone, PartialEq)]
pub struct Kind(pub AgentKind);

impl Kind {
    fn read(v: Value) -> Result<Self, Bad> {
        let t = string(v)?;
        parse_kind(&t).map(Kind).map_err(|e| Bad::quoted(&t, e.to_string()))
    }
}

/// A choice among names: the first name of a value is the one written.
pub trait Named: Copy + PartialEq + 'static {
    const NAMES: &'static [(&'static str, Self)];
    /// Why another name is refused.
    const USE: &'static str;
    /// Why a value that is not a string is refused.
    const NOT_A_STRING: &'static str = "expected a string";
}

/// One of `T`'s names.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Name<T>(pub T);

impl<'de, T: Named> Deserialize<'de> for Name<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let found = match v.as_str() {
            None => Err(Bad::new(&v, T::NOT_A_STRING)),
            Some(s) => T::NAMES.iter().find(|(n, _)| *n == s).ok_or(Bad::quoted(s, T::USE)),
        };
        found.map(|(_, t)| Name(*t)).map_err(serde::de::Error::custom)
    }
}

impl<T: Named> Serialize for Name<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let name = T::NAMES.iter().find(|(_, t)| *t == self.0).map_or("", |(n, _)| n);
        s.serialize_str(name)
    }
}

/// `Named` for each type: its names, the first of a value the one written, and `USE`.
macro_rules! named {
    ($($t:ident [$($n:literal => $v:ident),*] $use:literal $(, $nas:expr)?;)*) => {$(
        impl Named for $t {
            const NAMES: &'static [(&'static str, Self)] = &[$(($n, $t::$v)),*];
            const USE: &'static str = $use;
            $(const NOT_A_STRING: &'static str = $nas;)?
        }
    )*};
}

named! {
    Policy [
        "anthropic" => Anthropic, "every-block" => EveryBlock, "every_block" => EveryBlock,
        "openai" => OpenAi, "gemini" => Gemini, "vllm" => Vllm, "sglang" => Sglang
    ] "use one of \"anthropic\", \"every-block\", \"openai\", \"gemini\", \"vllm\", \"sglang\"";
    ThinkingHistory ["kept" => Kept, "stripped" => Stripped, "none" => None]
        "use \"kept\", \"stripped\" or \"none\"";
    Router ["round-robin" => RoundRobin, "prefix-aware" => PrefixAware]
        "use \"round-robin\" or \"prefix-aware\"";
    Sharing ["fcfs-chunked" => FcfsChunked, "processor-sharing" => ProcessorSharing]
        "use \"fcfs-chunked\" or \"processor-sharing\"";
    OpenAiContract ["classic" => Classic, "breakpoints" => Breakpoints]
        "use \"classic\" or \"breakpoints\"";
    GeminiMode ["implicit" => Implicit, "explicit" => Explicit] "use \"implicit\" or \"explicit\"";
    CacheKeyMode ["none" => None, "shared" => Shared, "per-agent" => PerAgent, "sharded" => Sharded]
        "use one of \"none\", \"shared\", \"per-agent\", \"sharded\"";
    LatencyPreset ["calibrated" => Calibrated, "launch-2024" => Launch2024]
        "use one of calibrated, launch-2024";
    Answer ["hold_cap" => HoldCap, "cost" => Cost] "expected one of hold_cap, cost",
        "expected one of hold_cap, cost";
}
