//! The question as the page's settings make it: the file's question names the shared prefix
//! ("a shared 11.5k-token prefix") and the number of agents ("3 Explore sub-agents"); when the
//! page changes them, the question shown and exported says the new values, not the file's.

use crate::config::{AgentKind, ExperimentSpec};

/// The key of the agents' own line of the shared prefix: the sub-agent type's tools and
/// system prompt, or the parent's conversation for the kinds that fork it.
pub fn line_key(exp: &ExperimentSpec) -> &'static str {
    match exp.workload.kind {
        AgentKind::Subagent => "workload.subagent_tokens",
        _ => "workload.parent_tokens",
    }
}

/// The brief's tokens in the shared prefix (a `/btw` question carries none;
/// `model::workload::push_brief`).
pub fn brief_tokens(exp: &ExperimentSpec) -> u64 {
    match exp.workload.kind {
        AgentKind::Btw => 0,
        _ => exp.workload.brief_tokens,
    }
}

/// The shared prefix every agent starts with, in tokens: its line, then the brief
/// (`model::workload::shared`).
pub fn shared_prefix_tokens(exp: &ExperimentSpec) -> u64 {
    let line = match line_key(exp) {
        "workload.subagent_tokens" => exp.workload.subagent_tokens,
        _ => exp.workload.parent_tokens,
    };
    line + brief_tokens(exp)
}

/// Tokens as a question writes them: `11.5k`, `80k`, `1.2M`, `900`.
pub fn tokens_short(n: u64) -> String {
    let (x, unit) = match n {
        n if n >= 1_000_000 => (n as f64 / 1e6, "M"),
        n if n >= 1_000 => (n as f64 / 1e3, "k"),
        n => return n.to_string(),
    };
    let text = format!("{x:.1}");
    format!("{}{unit}", text.strip_suffix(".0").unwrap_or(&text))
}

/// `question` (written for `file`) with the shared prefix's size and the number of agents
/// of `now` where it names `file`'s: each as a whole word (`11.5k`, `11,500` or `11500`
/// before "-token" or " token"; the agents' number before a word naming agents or forks).
pub fn follow(question: &str, file: &ExperimentSpec, now: &ExperimentSpec) -> String {
    let mut q = question.to_string();
    let (before, after) = (shared_prefix_tokens(file), shared_prefix_tokens(now));
    if before != after {
        for old in [tokens_short(before), thousands(before), before.to_string()] {
            for tail in ["-token", " token", " prefix", "-prefix"] {
                q = replace_word(
                    &q,
                    &format!("{old}{tail}"),
                    &format!("{}{tail}", tokens_short(after)),
                );
            }
        }
    }
    let (before, after) = (file.workload.agents, now.workload.agents);
    if before != after {
        q = replace_agents(&q, before, after);
    }
    q
}

/// `n` with thousands separated by commas: `11,500`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `text` with `old` replaced by `new` wherever `old` is not inside a longer number or word.
fn replace_word(text: &str, old: &str, new: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(old) {
        let glued = rest[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '.' || c == ',');
        out.push_str(&rest[..i]);
        out.push_str(if glued { old } else { new });
        rest = &rest[i + old.len()..];
    }
    out.push_str(rest);
    out
}

/// Words that name the agents a number counts.
const AGENT_WORDS: [&str; 4] = ["agent", "fork", "sub-agent", "subagent"];

/// The number `before` replaced by `after` where it counts agents: followed, within two more
/// words, by a word naming agents or forks ("3 Explore sub-agents", "10 forks").
fn replace_agents(text: &str, before: u32, after: u32) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let old = before.to_string();
    let counts = |i: usize| {
        words[i + 1..].iter().take(3).any(|w| {
            let w = w.to_lowercase();
            AGENT_WORDS.iter().any(|a| w.starts_with(a))
        })
    };
    let out: Vec<String> = (0..words.len())
        .map(|i| match words[i] == old && counts(i) {
            true => after.to_string(),
            false => words[i].to_string(),
        })
        .collect();
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_read_as_a_question_writes_them() {
        assert_eq!(tokens_short(11_500), "11.5k");
        assert_eq!(tokens_short(80_000), "80k");
        assert_eq!(tokens_short(1_250_000), "1.2M");
        assert_eq!(tokens_short(900), "900");
        assert_eq!(thousands(11_500), "11,500");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn the_prefix_and_the_agents_follow_the_values() {
        let q = "Claude Code launches 3 Explore sub-agents together (a shared 11.5k-token \
                 prefix, 111.5k-token windows): a 3 s hold?";
        assert_eq!(
            replace_word(q, "11.5k-token", "80k-token"),
            q.replace("a shared 11.5k", "a shared 80k")
        );
        assert_eq!(replace_agents(q, 3, 10), q.replace("launches 3", "launches 10"));
        assert_eq!(replace_agents("fans out 10 forks", 10, 4), "fans out 4 forks");
    }
}
