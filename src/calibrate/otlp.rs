//! Observations from OpenTelemetry spans (OTLP JSON with the GenAI semantic conventions): the
//! model calls `replay::otlp` reads (attribute names and each provider's token accounting are
//! documented there and in docs/calibrate.md). Groups are trace ids.

use std::path::Path;

use super::{CalibrateError, Observation, Observations};

/// Read an OTLP JSON export (or JSON Lines of exports) into `out`.
pub fn read(path: &Path, out: &mut Observations) -> Result<(), CalibrateError> {
    let (calls, note) = crate::replay::otlp::read(path)?;
    out.notes.extend(note);
    for c in calls {
        let obs = Observation {
            model: out.model(&c.model),
            group: out.group(&format!("trace {}", c.trace_id)),
            prefill_tokens: c.split.prefill(),
            cached_tokens: c.split.cache_read,
            output_tokens: c.split.output,
            ttft_s: c.ttft_s,
            duration_s: c.duration_s,
        };
        out.obs.push(obs);
    }
    Ok(())
}
