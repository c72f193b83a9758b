//! `prefixsim calibrate` as one call: the inputs read (format guessed or named, the claude-code
//! cache inference's TTL), the latency model fitted per model, backtested on the `validate`
//! files, its table, JSON and latency.toml as the command gives them, its notes and warnings,
//! and the files `calibrate --out` writes (all or nothing). The command line parses arguments
//! and prints; the Python package calls the same.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context as _};

use super::error::Error;
use super::outdir;
use crate::calibrate::estimate::Calibration;
use crate::calibrate::{self, report, ObservationFormat, Observations, Settings};

/// What `prefixsim calibrate` is asked.
#[derive(Debug, Clone, Default)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct CalibrateRequest {
    /// Input files or directories (a directory: claude-code traces).
    pub inputs: Vec<PathBuf>,
    /// `claude-code`, `usage-log` or `otlp`; `None`: guessed per input.
    pub format: Option<String>,
    /// TTL of the claude-code cache-read inference, microseconds (`None`: never expires; the
    /// command line's default is 5 minutes, `parse_ttl("5m")`).
    pub ttl_us: Option<u64>,
    /// Backtest the fit on these files' requests.
    pub validate: Vec<PathBuf>,
    /// Format of the `validate` files; `None`: guessed per file.
    pub validate_format: Option<String>,
    /// Write latency.toml, calibration.json and the figures here (absent or empty, unless
    /// `force`).
    pub out: Option<PathBuf>,
    /// Replace `out` when it holds files.
    pub force: bool,
}

/// What `prefixsim calibrate` prints and writes for a request.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) struct CalibrateDone {
    /// What `calibrate --json` prints.
    pub json: String,
    /// The table `calibrate` prints (with the validation table when `validate` is given).
    pub text: String,
    /// What latency.toml holds.
    pub latency_toml: String,
    /// The lines `calibrate` prints as `note: ...` on stderr, in order.
    pub notes: Vec<String>,
    /// The lines `calibrate` prints as `warning: ...` on stderr (models skipped), in order.
    pub warnings: Vec<String>,
}

/// A `--ttl` value: a positive duration (`5m`, `1h`) in microseconds, or `None` for `none`.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn parse_ttl(text: &str) -> Result<Option<u64>, Error> {
    if text.trim() == "none" {
        return Ok(None);
    }
    match crate::time::parse_duration_us(text) {
        Ok(0) => Err(Error::Usage("a TTL must be positive (or `none`)".into())),
        Ok(us) => Ok(Some(us)),
        Err(e) => Err(Error::Usage(format!("{e} (e.g. 5m, 1h, none)"))),
    }
}

impl CalibrateRequest {
    /// The `prefixsim calibrate` command of this request (paths as given), for the header of
    /// latency.toml: what the command line typed, or what reproduces a library call.
    pub(crate) fn command_line(&self) -> String {
        let mut parts = vec!["prefixsim calibrate".to_string()];
        parts.extend(self.inputs.iter().map(|p| p.display().to_string()));
        if let Some(f) = &self.format {
            parts.push(format!("--format {f}"));
        }
        let ttl = self.ttl_us.map(|us| crate::time::SimDuration::from_us(us).to_string());
        parts.push(format!("--ttl {}", ttl.as_deref().unwrap_or("none")));
        if let Some(d) = &self.out {
            parts.push(format!("--out {}", d.display()));
        }
        parts.join(" ")
    }
}

/// Fit the latency model as `prefixsim calibrate` does; with `out`, write its files there
/// (the directory opened and locked before the work, refused if it holds files without
/// `force`). Bad input (also a bad `validate` file) is an input error, and nothing is written.
#[cfg_attr(not(feature = "cli"), allow(dead_code))]
pub(crate) fn calibrate_command(req: &CalibrateRequest) -> Result<CalibrateDone, Error> {
    // Opened (and locked) first: a directory that will be refused is refused before the work.
    let out = req.out.as_deref().map(|d| outdir::open(d, req.force, "")).transpose()?;
    let data = read_all(&req.inputs, req.format.as_deref(), req.ttl_us)?;
    let validate = (!req.validate.is_empty())
        .then(|| read_all(&req.validate, req.validate_format.as_deref(), req.ttl_us))
        .transpose()?;
    if !data.obs.iter().any(|o| o.ttft_s.is_some()) {
        return Err(Error::usage(anyhow!(
            "{}: no request has a measured time to first token (ttft); nothing to fit",
            inputs_text(&data)
        )));
    }
    let mut cal = calibrate::calibrate(&data, &Settings::default());
    let mut notes: Vec<String> =
        data.notes.iter().chain(validate.iter().flat_map(|v| &v.notes)).cloned().collect();
    if let Some(v) = &validate {
        for model in calibrate::validate(&mut cal, v) {
            notes.push(format!("{model}: in the --validate files but not fitted from INPUT"));
        }
    }
    let inputs = inputs_text(&data);
    if cal.models.is_empty() {
        // The error says why each model was skipped: no warning says it first.
        let why: Vec<String> =
            cal.skipped.iter().map(|s| format!("{}: {}", s.model, s.reason)).collect();
        let why = why.join("; ");
        return Err(Error::usage(anyhow!("{inputs}: no model has enough data to fit ({why})")));
    }
    let warnings = cal.skipped.iter().map(|s| format!("{} skipped: {}", s.model, s.reason));
    let done = CalibrateDone {
        json: report::json(&cal),
        text: report::text(&cal, &inputs, validate.as_ref().map(inputs_text).as_deref()),
        latency_toml: report::latency_toml(&cal, &req.command_line(), &inputs),
        notes,
        warnings: warnings.collect(),
    };
    if let Some(out) = out {
        write_all(out.path(), &files(&cal, &done)?).map_err(Error::failed)?;
        out.commit()?;
    }
    Ok(done)
}

/// Read `inputs` into one set of observations; a bad file or format name is an input error.
fn read_all(
    inputs: &[PathBuf],
    format: Option<&str>,
    ttl_us: Option<u64>,
) -> Result<Observations, Error> {
    let format = format.map(parse_format).transpose()?;
    let mut data = Observations::default();
    for input in inputs {
        calibrate::read_with_ttl(input, format, ttl_us, &mut data).map_err(Error::usage)?;
    }
    Ok(data)
}

/// An input format named by the caller; an unknown name is an input error listing the names.
fn parse_format(name: &str) -> Result<ObservationFormat, Error> {
    ObservationFormat::parse(name).ok_or_else(|| {
        let shown: String = name.chars().take(40).collect();
        Error::Usage(format!(
            "unknown input format `{shown}` (one of: {})",
            ObservationFormat::NAMES.join(", ")
        ))
    })
}

/// `PATH (format)` for each input.
fn inputs_text(data: &Observations) -> String {
    let parts: Vec<String> =
        data.inputs.iter().map(|(p, f)| format!("{} ({})", p.display(), f.name())).collect();
    parts.join(", ")
}

/// The files `calibrate --out` writes: latency.toml, calibration.json and (with `plot`) the
/// figures, SVG and PNG.
fn files(cal: &Calibration, done: &CalibrateDone) -> Result<Vec<(String, Vec<u8>)>, Error> {
    #[cfg_attr(not(feature = "plot"), allow(unused_mut))]
    let mut files = vec![
        ("latency.toml".to_string(), done.latency_toml.clone().into_bytes()),
        ("calibration.json".to_string(), done.json.clone().into_bytes()),
    ];
    #[cfg(feature = "plot")]
    for f in [calibrate::figure::Figure::Fit, calibrate::figure::Figure::Residuals] {
        use calibrate::figure;
        let svg = figure::svg(cal, f).map_err(Error::failed)?;
        files.push((format!("{}.svg", f.name()), svg.into_bytes()));
        files.push((format!("{}.png", f.name()), figure::png(cal, f).map_err(Error::failed)?));
    }
    #[cfg(not(feature = "plot"))]
    let _ = cal;
    Ok(files)
}

/// Write every file to `NAME.tmp`, then rename them all: a failure leaves no partial file.
fn write_all(dir: &Path, files: &[(String, Vec<u8>)]) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tmp = |name: &str| dir.join(format!("{name}.tmp"));
    for (name, bytes) in files {
        if let Err(e) = std::fs::write(tmp(name), bytes) {
            for (n, _) in files {
                let _ = std::fs::remove_file(tmp(n));
            }
            return Err(e).with_context(|| format!("cannot write {}", tmp(name).display()));
        }
    }
    for (name, _) in files {
        std::fs::rename(tmp(name), dir.join(name))
            .with_context(|| format!("cannot rename {}", tmp(name).display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "data/samples/usage-log.jsonl";

    /// A fresh scratch directory for one test.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir()
            .join(format!("prefixsim-calibrate-cmd-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// The sample log's lines of `model` only, in `dir/name`.
    fn only(model: &str, dir: &Path, name: &str) -> PathBuf {
        let text = std::fs::read_to_string(LOG).unwrap();
        let lines: String =
            text.lines().filter(|l| l.contains(model)).map(|l| format!("{l}\n")).collect();
        let path = dir.join(name);
        std::fs::write(&path, lines).unwrap();
        path
    }

    fn request(inputs: Vec<PathBuf>) -> CalibrateRequest {
        CalibrateRequest { inputs, ttl_us: Some(300_000_000), ..Default::default() }
    }

    #[test]
    fn ttl_values_parse_as_the_command_line_reads_them() {
        assert_eq!(parse_ttl("5m").unwrap(), Some(300_000_000));
        assert_eq!(parse_ttl("1h").unwrap(), Some(3_600_000_000));
        assert_eq!(parse_ttl(" none ").unwrap(), None);
        let zero = parse_ttl("0s").unwrap_err();
        assert!(zero.is_input());
        assert_eq!(zero.to_string(), "a TTL must be positive (or `none`)");
        let bad = parse_ttl("soon").unwrap_err();
        assert!(bad.is_input() && bad.to_string().ends_with(" (e.g. 5m, 1h, none)"), "{bad}");
    }

    #[test]
    fn out_holds_exactly_what_the_call_returns() {
        let out = scratch("out").join("calib");
        let req = CalibrateRequest { out: Some(out.clone()), ..request(vec![LOG.into()]) };
        let done = calibrate_command(&req).unwrap();
        let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap();
        assert_eq!(read("latency.toml"), done.latency_toml);
        assert!(done.latency_toml.contains(&req.command_line()), "{}", done.latency_toml);
        assert_eq!(read("calibration.json"), done.json);
        let mut names: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let mut want = vec!["calibration.json", "latency.toml"];
        if cfg!(feature = "plot") {
            want.extend([
                "ttft_fit.png",
                "ttft_fit.svg",
                "ttft_residuals.png",
                "ttft_residuals.svg",
            ]);
        }
        assert_eq!(names, want);
        assert!(done.text.starts_with(&format!("Latency per model from {LOG} (usage-log)")));
        assert!(done.notes.is_empty() && done.warnings.is_empty(), "{done:?}");
        assert!(calibrate_command(&req).unwrap_err().is_input(), "a full --out is refused");
    }

    #[test]
    fn notes_and_warnings_say_what_was_not_fitted() {
        let dir = scratch("notes");
        let haiku = only("claude-haiku", &dir, "haiku.jsonl");
        let mut lone = std::fs::read_to_string(&haiku).unwrap();
        lone += &lone.lines().next().unwrap().replace("claude-haiku-4-5-20251001", "lone-model");
        std::fs::write(&haiku, lone + "\n").unwrap();
        let req = CalibrateRequest { validate: vec![LOG.into()], ..request(vec![haiku.clone()]) };
        let done = calibrate_command(&req).unwrap();
        let note = "claude-sonnet-4-5-20250929: in the --validate files but not fitted from INPUT";
        assert_eq!(done.notes, [note]);
        assert_eq!(done.warnings.len(), 1, "{:?}", done.warnings);
        assert!(done.warnings[0].starts_with("lone-model skipped: "), "{:?}", done.warnings);
        let plain = calibrate_command(&request(vec![haiku])).unwrap();
        assert!(done.text.starts_with(&plain.text[..plain.text.find('\n').unwrap()]));
        assert!(done.text.len() > plain.text.len(), "the validation table is added");
    }

    #[test]
    fn bad_inputs_are_input_errors_naming_them() {
        let bad = CalibrateRequest { format: Some("usagelog".into()), ..request(vec![LOG.into()]) };
        let err = calibrate_command(&bad).unwrap_err();
        assert!(err.is_input());
        assert_eq!(
            err.to_string(),
            "unknown input format `usagelog` (one of: claude-code, usage-log, otlp)"
        );
        let dir = scratch("nottft");
        let log = std::fs::read_to_string(LOG).unwrap().replace("\"ttft_ms\"", "\"ttfx_ms\"");
        std::fs::write(dir.join("log.jsonl"), log).unwrap();
        let err = calibrate_command(&request(vec![dir.join("log.jsonl")])).unwrap_err();
        assert!(err.is_input());
        assert!(
            err.to_string().ends_with(
                "log.jsonl (usage-log): no request has a measured time to first token (ttft); \
             nothing to fit"
            ),
            "{err}"
        );
    }
}
