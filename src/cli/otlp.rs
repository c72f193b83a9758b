//! `run --otlp FILE`: replication 0 of every strategy (the runs `--trace` draws), simulated
//! again with every request recorded, written as OpenTelemetry spans (`results::otlp`),
//! streamed to `FILE.tmp` and renamed when whole.

use std::path::Path;

use anyhow::anyhow;

use super::Error;
use crate::config::{AgentKind, ExperimentSpec};
use crate::results::otlp::{write_run, SpanRequest, SpanRun};
use crate::results::{AtomicFile, WriteError};

/// Most requests one run may write as spans: 1,000,000 (about 1 KB of JSON each, 1 GB).
pub const MAX_OTLP_SPANS: usize = 1_000_000;

/// Refuse `path` before the run starts: an existing file unless `force` (the `--out` contract
/// for a file), anything but a file there, or a directory to put it in that does not exist.
pub fn check_target(path: &Path, force: bool) -> Result<(), Error> {
    if !force && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
        return Err(Error::usage(anyhow!(
            "--otlp {}: the file exists; choose another name, or add --force to replace it",
            path.display()
        )));
    }
    crate::api::outdir::check_file(path, force)?;
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(Error::usage(anyhow!(
            "--otlp {}: {} is not a directory",
            path.display(),
            parent.display()
        )));
    }
    Ok(())
}

/// Write the spans of `spec`'s runs to `path`, the clock starting at `epoch_ns`; returns
/// (runs, spans) written.
pub fn write(spec: &ExperimentSpec, path: &Path, epoch_ns: u64) -> Result<(u32, u64), Error> {
    crate::results::replaceable(path).map_err(Error::usage)?;
    let mut file = AtomicFile::create(path).map_err(Error::File)?;
    let tmp = file.tmp().to_path_buf();
    let failed = |source| Error::File(WriteError { path: tmp.clone(), source });
    let mut sim = crate::model::Simulator::new();
    let mut spans = 0u64;
    for (s, strategy) in spec.strategies.iter().enumerate() {
        let label = crate::config::strategy_label(strategy);
        let d = sim
            .run_sampled(spec, strategy, 0, None)
            .map_err(|e| Error::failed(anyhow!("--otlp: {label}: {e}")))?;
        if d.requests.len() > MAX_OTLP_SPANS {
            return Err(Error::usage(anyhow!(
                "{}: replication 0 of {label} has {} requests, more than the {MAX_OTLP_SPANS} \
                 spans --otlp writes per run (docs/limits.md); lower workload.agents",
                path.display(),
                d.requests.len()
            )));
        }
        let model = |m: usize| match (&spec.workload.kind, m) {
            (AgentKind::ForkOtherModel { model }, 1) => model.clone(),
            _ => spec.model.name.clone(),
        };
        let requests: Vec<SpanRequest> = d
            .requests
            .iter()
            .map(|r| SpanRequest {
                agent: r.agent,
                request: r.request,
                send_us: r.send_us,
                ttft_us: r.ttft_us,
                end_us: r.send_us + r.ttft_us + r.decode_us,
                model: model(r.model),
                input_tokens: r.prompt_tokens,
                cache_read: r.usage.cache_read,
                cache_write: r.usage.cache_write_5m + r.usage.cache_write_1h,
                output_tokens: r.output_tokens,
            })
            .collect();
        let run = SpanRun {
            experiment: &spec.name,
            strategy: &label,
            strategy_index: s as u32,
            seed: spec.seed,
            replication: 0,
            agents: spec.workload.agents,
            requests: &requests,
        };
        spans += write_run(file.writer(), &run, epoch_ns).map_err(failed)?;
    }
    file.commit().map_err(Error::File)?;
    Ok((spec.strategies.len() as u32, spans))
}
