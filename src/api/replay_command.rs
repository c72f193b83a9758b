//! `prefixsim replay` as one call: a trace replayed as the command line asks (format guessed
//! or named, `--set`, `--what-if` with the TTL ladder), its table and JSON as the command
//! prints them, its warnings, and `replay.json` written into an output directory. The command
//! line parses arguments and prints; the Python package calls the same.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context as _};

use super::error::Error;
use super::outdir;
use super::replay::TraceReplay;
use crate::replay::{output, TraceFormat};

/// The trace's skipped-line warnings kept (the table counts them all).
const WARNINGS_MAX: usize = 20;

/// What `prefixsim replay` is asked.
#[derive(Debug, Clone, Default)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct ReplayRequest {
    /// The trace: a file, or a directory of claude-code traces.
    pub trace: PathBuf,
    /// `mooncake`, `claude-code`, `requests`, `usage-log` or `otlp`; `None`: guessed from the
    /// file (`replay --format`'s help says how).
    pub format: Option<String>,
    /// Replay settings, `KEY=VALUE` each (`--set`).
    pub sets: Vec<String>,
    /// What-if choices (`--what-if`); when any is given (even an empty one), TTL 5m, 1h and
    /// none are compared too.
    pub what_if: Vec<String>,
    /// Skip malformed lines with a warning instead of failing.
    pub lenient: bool,
    /// Entries readable as soon as they are written.
    pub instant_ready: bool,
    /// Write replay.json here (absent or empty, unless `force`).
    pub out: Option<PathBuf>,
    /// Replace `out` when it holds files.
    pub force: bool,
}

/// What `prefixsim replay` prints for a request.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct ReplayDone {
    /// What `replay --json` prints (one object, or an array with what-if choices).
    pub json: String,
    /// The table `replay` prints.
    pub text: String,
    /// The lines `replay` prints as `warning: ...` on stderr, in order: the first
    /// `WARNINGS_MAX` skipped lines, then the warning that no block repeats, if none does.
    pub warnings: Vec<String>,
}

/// Replay the trace as `prefixsim replay` does; with `out`, write replay.json there (the
/// directory opened and locked before the work, refused if it holds files without `force`).
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn replay_command(req: &ReplayRequest) -> Result<ReplayDone, Error> {
    // Opened (and locked) first: a directory that will be refused is refused before the work.
    let out = req.out.as_deref().map(|d| outdir::open(d, req.force, "")).transpose()?;
    let format = match &req.format {
        Some(f) => parse_format(f)?,
        None => guess_format(&req.trace).map_err(Error::usage)?,
    };
    let mut replay = TraceReplay::new(&req.trace, format);
    for s in &req.sets {
        replay = replay.set(s)?;
    }
    replay = replay.lenient(req.lenient).instant_ready(req.instant_ready);
    if !req.what_if.is_empty() {
        replay = req.what_if.iter().fold(replay.with_ttl_ladder(), |r, w| r.what_if(w));
    }
    let result = replay.replay()?;
    let mut warnings: Vec<String> = result.warnings.iter().take(WARNINGS_MAX).cloned().collect();
    if result.reuse_gap_us.is_empty() {
        warnings.push(
            "no prefix block appears twice in this trace, so nothing can hit; \
             check --format and block_size"
                .to_string(),
        );
    }
    let settings = replay.settings();
    let name = req.trace.file_name().map_or("trace".into(), |n| n.to_string_lossy().into_owned());
    if let Some(out) = out {
        let curves = replay.curves(result.distinct_tokens)?;
        let v = output::replay_file_json(&result, &settings, &name, &curves);
        let path = out.path().join("replay.json");
        crate::results::write_atomic(&path, output::sorted_json(v)).map_err(Error::failed)?;
        out.commit()?;
    }
    let json =
        output::sorted_json(output::stdout_json(&result, &settings, !req.what_if.is_empty()));
    let text = output::text(&result, &settings, &name);
    Ok(ReplayDone { json, text, warnings })
}

/// A format named by the caller; an unknown name is an input error listing the names.
fn parse_format(name: &str) -> Result<TraceFormat, Error> {
    TraceFormat::parse(name).ok_or_else(|| {
        let shown: String = name.chars().take(40).collect();
        Error::Usage(format!(
            "unknown trace format `{shown}` (one of: {})",
            TraceFormat::NAMES.join(", ")
        ))
    })
}

/// A directory is claude-code, a file with `resourceSpans` in its first 64 KiB OTLP spans;
/// else a `.json` file is claude-code, and the first JSONL line decides.
fn guess_format(path: &Path) -> anyhow::Result<TraceFormat> {
    use crate::input::contains as has;
    if path.is_dir() {
        return Ok(TraceFormat::ClaudeCode);
    }
    let head =
        crate::input::head(path).with_context(|| format!("cannot read {}", path.display()))?;
    let first = head.split(|&b| b == b'\n').next().unwrap_or(&[]);
    if has(&head, b"\"resourceSpans\"") || has(&head, b"\"resource_spans\"") {
        Ok(TraceFormat::Otlp)
    } else if crate::input::has_extension(path, &["json"]) {
        Ok(TraceFormat::ClaudeCode)
    } else if has(first, b"\"hash_ids\"") {
        Ok(TraceFormat::Mooncake)
    } else if has(first, b"\"body\"") {
        Ok(TraceFormat::Requests)
    } else if has(first, b"\"usage\"") || has(first, b"\"usageMetadata\"") {
        Ok(TraceFormat::UsageLog)
    } else {
        Err(anyhow!(
            "{}:1: cannot tell the trace format (no `hash_ids`, `body`, `usage`, `usageMetadata` \
             or `resourceSpans` key); use --format",
            path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh scratch directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir()
            .join(format!("prefixsim-replay-cmd-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A Mooncake line at `t` ms with these block ids (4-token blocks).
    fn line(t: u64, ids: &[u64]) -> String {
        let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
        let len = 4 * ids.len();
        format!(
            "{{\"timestamp\": {t}, \"input_length\": {len}, \"output_length\": 1, \"hash_ids\": [{}]}}\n",
            ids.join(", ")
        )
    }

    fn request(trace: &Path) -> ReplayRequest {
        let sets = vec!["block_size=4".to_string()];
        ReplayRequest { trace: trace.to_path_buf(), sets, ..ReplayRequest::default() }
    }

    #[test]
    fn an_unknown_format_name_is_an_input_error_naming_the_names() {
        let dir = scratch("format");
        let trace = dir.join("t.jsonl");
        std::fs::write(&trace, line(0, &[1, 2])).unwrap();
        let req = ReplayRequest { format: Some("mooncak".into()), ..request(&trace) };
        let err = replay_command(&req).unwrap_err();
        assert!(err.is_input());
        assert_eq!(
            err.to_string(),
            "unknown trace format `mooncak` (one of: mooncake, claude-code, requests, usage-log, otlp)"
        );
        let named = ReplayRequest { format: Some("mooncake".into()), ..request(&trace) };
        assert_eq!(replay_command(&named).unwrap(), replay_command(&request(&trace)).unwrap());
    }

    #[test]
    fn what_if_compares_the_ttl_ladder_in_the_json_and_the_table() {
        let dir = scratch("ladder");
        let trace = dir.join("t.jsonl");
        std::fs::write(&trace, line(0, &[1, 2, 3]) + &line(360_000, &[1, 2, 3])).unwrap();
        let what_if = vec![String::new(), "cache.capacity_tokens=4".to_string()];
        let done = replay_command(&ReplayRequest { what_if, ..request(&trace) }).unwrap();
        let v: serde_json::Value = serde_json::from_str(&done.json).unwrap();
        let labels: Vec<&str> =
            v.as_array().unwrap().iter().map(|c| c["label"].as_str().unwrap()).collect();
        let want = ["cache.ttl=5m", "cache.ttl=1h", "cache.ttl=none", "cache.capacity_tokens=4"];
        assert_eq!(labels, want);
        assert!(done.json.ends_with("}\n]\n"), "{}", done.json);
        assert!(want.iter().all(|l| done.text.contains(l)), "{}", done.text);
        assert!(done.warnings.is_empty(), "{:?}", done.warnings);
        let plain = replay_command(&request(&trace)).unwrap();
        assert!(plain.json.starts_with('{'), "one choice, one object: {}", plain.json);
    }

    #[test]
    fn warnings_keep_the_first_skipped_lines_then_say_nothing_repeats() {
        let dir = scratch("warnings");
        let trace = dir.join("t.jsonl");
        let bad = "{\"timestamp\": 1}\n".repeat(WARNINGS_MAX + 5);
        std::fs::write(&trace, line(0, &[1]) + &bad + &line(5, &[2])).unwrap();
        let done = replay_command(&ReplayRequest { lenient: true, ..request(&trace) }).unwrap();
        assert_eq!(done.warnings.len(), WARNINGS_MAX + 1, "{:?}", done.warnings);
        assert!(done.warnings[0].contains(":2:") && done.warnings[0].ends_with("(skipped)"));
        assert!(done.warnings[WARNINGS_MAX].starts_with("no prefix block appears twice"));
        assert!(
            done.text.contains(&format!("{} line(s) skipped", WARNINGS_MAX + 5)),
            "{}",
            done.text
        );
    }

    #[test]
    fn out_gets_replay_json_and_a_full_directory_is_refused_without_force() {
        let dir = scratch("out");
        let trace = dir.join("t.jsonl");
        std::fs::write(&trace, line(0, &[1, 2]) + &line(1_000, &[1, 2])).unwrap();
        let out = dir.join("out");
        let req = ReplayRequest { out: Some(out.clone()), ..request(&trace) };
        let done = replay_command(&req).unwrap();
        let file: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join("replay.json")).unwrap()).unwrap();
        assert_eq!(
            (file["kind"].as_str(), file["trace"].as_str()),
            (Some("replay"), Some("t.jsonl"))
        );
        let stdout: serde_json::Value = serde_json::from_str(&done.json).unwrap();
        assert!(stdout["cost_usd"].is_f64(), "{stdout}");
        assert_eq!(file["results"][0]["cost_usd"], stdout["cost_usd"]);
        let err = replay_command(&req).unwrap_err();
        assert!(err.is_input(), "{err}");
        assert!(replay_command(&ReplayRequest { force: true, ..req }).is_ok());
    }
}
