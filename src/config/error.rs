//! Why an experiment could not be read: every message names the file, the dotted key and the
//! value. `Bad` carries a refused value out of a field's `Deserialize`; `At` builds the errors
//! of a section's `validate`.

use std::fmt;

/// Why an experiment could not be read; the message names the file, the key and the value.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{origin}: {message}")]
    Syntax { origin: String, message: String },
    #[error("{origin}: unknown key `{}`{hint}", capped(key))]
    UnknownKey { origin: String, key: String, hint: String },
    #[error("{origin}: `{}` = {}: {reason}", capped(key), capped(value))]
    BadValue { origin: String, key: String, value: String, reason: String },
    #[error("--set `{}`: {reason}", capped(assignment))]
    BadSet { assignment: String, reason: String },
    /// A bad value or key that a `--set` put there: the message names the `--set` first.
    #[error("--set {}: {source}", capped(assignment))]
    FromSet { assignment: String, source: Box<ConfigError> },
    #[error("cannot read experiment file {path}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

impl ConfigError {
    /// The dotted key the error is about, if any.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::UnknownKey { key, .. } | ConfigError::BadValue { key, .. } => Some(key),
            ConfigError::FromSet { source, .. } => source.key(),
            _ => None,
        }
    }

    /// The error, naming the `--set` among `sets` that assigned its key (the last one that
    /// touched it), when one did: the value came from the command line, not the file.
    pub fn blame_set(self, sets: &[String]) -> ConfigError {
        let Some(key) = self.key() else { return self };
        let touches = |s: &&String| {
            let k = s.split_once('=').map_or(s.as_str(), |(k, _)| k).trim();
            k == key || key.starts_with(&format!("{k}.")) || k.starts_with(&format!("{key}."))
        };
        match sets.iter().rev().find(touches) {
            Some(s) => {
                ConfigError::FromSet { assignment: s.trim().to_string(), source: Box::new(self) }
            }
            None => self,
        }
    }
}

/// Longest piece of user input an error message echoes whole, in characters.
const MAX_ECHO: usize = 120;

/// `text` as an error message shows it: whole up to `MAX_ECHO` characters, else its start and
/// its length (a 10 MB key must not make a 10 MB message).
pub fn capped(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(MAX_ECHO) {
        None => text.into(),
        Some((end, _)) => format!("{}... ({} bytes)", &text[..end], text.len()).into(),
    }
}

/// A TOML syntax error in one line: where it is (line and column, from 1) and what the parser
/// expected, without the parser's multi-line snippet.
pub fn toml_syntax(e: &toml::de::Error, text: &str) -> String {
    let message = e.message().trim_end().replace('\n', "; ");
    let Some(span) = e.span() else { return message };
    let before = &text[..span.start.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("line {line}, column {column}: {}", capped(&message))
}

/// A refused value, as its error shows it, and why. It crosses serde as one message (value,
/// a unit separator, reason) and `Bad::split` takes it apart again at the value's path.
#[derive(Debug, Clone, PartialEq)]
pub struct Bad {
    pub value: String,
    pub reason: String,
}

const SEP: char = '\u{1f}';

impl Bad {
    pub fn new(value: impl fmt::Display, reason: impl Into<String>) -> Bad {
        Bad { value: value.to_string(), reason: reason.into() }
    }

    /// A refused string, shown in double quotes.
    pub fn quoted(text: &str, reason: impl Into<String>) -> Bad {
        Bad::new(format_args!("\"{text}\""), reason)
    }

    /// The value and reason of a message `Display` wrote; `None` for serde's own messages.
    pub fn split(message: &str) -> Option<Bad> {
        let (value, reason) = message.split_once(SEP)?;
        Some(Bad::new(value, reason))
    }
}

impl fmt::Display for Bad {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{SEP}{}", self.value, self.reason)
    }
}

/// Where a section's checks report from: the file and the section's dotted prefix.
#[derive(Debug, Clone, Copy)]
pub struct At<'a> {
    pub origin: &'a str,
    /// `workload.`, or empty at the top.
    pub prefix: &'a str,
}

impl<'a> At<'a> {
    /// The same file, in section `prefix` (`workload.`).
    pub fn section(self, prefix: &'a str) -> At<'a> {
        At { origin: self.origin, prefix }
    }

    /// `key` (in this section) = `value` is refused for `reason`.
    pub fn bad(
        self,
        key: &str,
        value: impl fmt::Display,
        reason: impl Into<String>,
    ) -> ConfigError {
        ConfigError::BadValue {
            origin: self.origin.to_string(),
            key: format!("{}{key}", self.prefix),
            value: value.to_string(),
            reason: reason.into(),
        }
    }

    /// `bad` with a string value, shown in double quotes.
    pub fn bad_str(self, key: &str, text: &str, reason: impl Into<String>) -> ConfigError {
        self.bad(key, format_args!("\"{text}\""), reason)
    }

    /// `key` (in this section) is no key of it; `known` gives the "did you mean" hint.
    pub fn unknown<'k>(self, key: &str, known: impl IntoIterator<Item = &'k str>) -> ConfigError {
        let hint = super::call::did_you_mean(key, known)
            .map(|s| format!(" (did you mean `{}{s}`?)", self.prefix))
            .unwrap_or_default();
        let key = format!("{}{key}", self.prefix);
        ConfigError::UnknownKey { origin: self.origin.to_string(), key, hint }
    }
}
