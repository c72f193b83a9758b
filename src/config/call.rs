//! The small call syntax shared by strategies, agent kinds and distributions:
//! `name`, `name(a, b)`, `name(key=value, key=value)`; commas inside `[...]` or `(...)` do not
//! split arguments. Knows nothing of what the names mean.

/// Why a `name(args)` text could not be parsed or bound.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("`{0}`: missing closing `)`")]
    MissingParen(String),
    #[error("empty name")]
    EmptyName,
    #[error("`{0}` is not a name (letters, digits, `_`)")]
    NotAName(String),
    #[error("unbalanced `{close}` in `{inner}`")]
    Unbalanced { close: char, inner: String },
    #[error("unbalanced brackets in `{0}`")]
    Unclosed(String),
    #[error("empty argument")]
    EmptyArgument,
    #[error("`{0}=` has no value")]
    NoValue(String),
    #[error("`{0}`: positional argument after a named one")]
    PositionalAfterNamed(String),
    #[error("`{call}` has no parameter `{key}` (expected: {expected})")]
    NoParameter { call: String, key: String, expected: String },
    #[error("`{call}` takes {count} argument(s) ({expected})")]
    TooMany { call: String, count: usize, expected: String },
    #[error("`{call}`: `{param}` given twice")]
    GivenTwice { call: String, param: String },
}

/// One parsed `name(args)` text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call<'a> {
    pub name: &'a str,
    pub args: Vec<Arg<'a>>,
}

/// One argument: `value` (positional) or `key=value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg<'a> {
    pub key: Option<&'a str>,
    pub value: &'a str,
}

/// Split `text` into a name and its arguments (trimmed); no meaning is checked here.
pub fn parse_call(text: &str) -> Result<Call<'_>, CallError> {
    let t = text.trim();
    let Some(open) = t.find('(') else {
        check_name(t)?;
        return Ok(Call { name: t, args: Vec::new() });
    };
    if !t.ends_with(')') {
        return Err(CallError::MissingParen(t.to_string()));
    }
    let name = t[..open].trim();
    check_name(name)?;
    let inner = &t[open + 1..t.len() - 1];
    let mut args = Vec::new();
    if !inner.trim().is_empty() {
        for part in split_top(inner)? {
            args.push(parse_arg(part)?);
        }
    }
    Ok(Call { name, args })
}

fn check_name(name: &str) -> Result<(), CallError> {
    if name.is_empty() {
        return Err(CallError::EmptyName);
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(CallError::NotAName(name.to_string()));
    }
    Ok(())
}

/// Split on commas at bracket depth 0.
fn split_top(inner: &str) -> Result<Vec<&str>, CallError> {
    let mut parts = Vec::new();
    let mut depth: i32 = 0;
    let mut start = 0;
    for (i, c) in inner.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => {
                depth -= 1;
                if depth < 0 {
                    return Err(CallError::Unbalanced { close: c, inner: inner.to_string() });
                }
            }
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(CallError::Unclosed(inner.to_string()));
    }
    parts.push(&inner[start..]);
    Ok(parts)
}

fn parse_arg(part: &str) -> Result<Arg<'_>, CallError> {
    let p = part.trim();
    if p.is_empty() {
        return Err(CallError::EmptyArgument);
    }
    let eq = p.find('=');
    let bracket = p.find(['[', '(']);
    match eq {
        Some(i) if bracket.is_none_or(|b| i < b) => {
            let key = p[..i].trim();
            check_name(key)?;
            let value = p[i + 1..].trim();
            if value.is_empty() {
                return Err(CallError::NoValue(key.to_string()));
            }
            Ok(Arg { key: Some(key), value })
        }
        _ => Ok(Arg { key: None, value: p }),
    }
}

/// Bind arguments to parameter names: positional in order, then by keyword. Returns one slot
/// per parameter. Unknown, repeated or out-of-order arguments are errors.
pub fn bind<'a>(call: &Call<'a>, params: &[&str]) -> Result<Vec<Option<&'a str>>, CallError> {
    let mut slots: Vec<Option<&'a str>> = vec![None; params.len()];
    let mut seen_keyword = false;
    for (pos, arg) in call.args.iter().enumerate() {
        let index = match arg.key {
            None if seen_keyword => {
                return Err(CallError::PositionalAfterNamed(call.name.to_string()))
            }
            None => pos,
            Some(key) => {
                seen_keyword = true;
                params.iter().position(|p| *p == key).ok_or_else(|| CallError::NoParameter {
                    call: call.name.to_string(),
                    key: key.to_string(),
                    expected: list(params),
                })?
            }
        };
        if index >= params.len() {
            return Err(CallError::TooMany {
                call: call.name.to_string(),
                count: params.len(),
                expected: list(params),
            });
        }
        if slots[index].is_some() {
            return Err(CallError::GivenTwice {
                call: call.name.to_string(),
                param: params[index].to_string(),
            });
        }
        slots[index] = Some(arg.value);
    }
    Ok(slots)
}

fn list(params: &[&str]) -> String {
    if params.is_empty() {
        "none".to_string()
    } else {
        params.join(", ")
    }
}

/// The closest candidate to `word` by edit distance, if it is close enough to be a typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        let d = edit_distance(word, c);
        if d <= 2.max(word.len() / 3) && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_positional_and_keyword() {
        let c = parse_call("wait_first(max_wait=5s, release=timer)").unwrap();
        assert_eq!(c.name, "wait_first");
        assert_eq!(c.args[1], Arg { key: Some("release"), value: "timer" });
        let c = parse_call("empirical([1, 2, 3])").unwrap();
        assert_eq!(c.args, vec![Arg { key: None, value: "[1, 2, 3]" }]);
        assert_eq!(parse_call("eager").unwrap().args.len(), 0);
        assert!(parse_call("uniform(1, 2").is_err());
        assert!(parse_call("uniform(1,, 2)").is_err());
    }

    #[test]
    fn binds_and_refuses() {
        let c = parse_call("lognormal(2s, p90=5s)").unwrap();
        assert_eq!(bind(&c, &["median", "p90"]).unwrap(), vec![Some("2s"), Some("5s")]);
        assert!(bind(&parse_call("f(a=1, 2)").unwrap(), &["a", "b"]).is_err());
        assert!(bind(&parse_call("f(c=1)").unwrap(), &["a", "b"]).is_err());
        assert!(bind(&parse_call("f(1, a=1)").unwrap(), &["a", "b"]).is_err());
        assert!(bind(&parse_call("f(1, 2, 3)").unwrap(), &["a", "b"]).is_err());
    }

    #[test]
    fn suggests_close_names() {
        assert_eq!(did_you_mean("agnets", ["agents", "turns"]), Some("agents"));
        assert_eq!(did_you_mean("zzzzzz", ["agents", "turns"]), None);
    }
}
