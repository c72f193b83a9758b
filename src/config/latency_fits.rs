pub const CALIBRATION_DRAWS: usize = 0;
// Generated data for `latency_presets.rs` (included there): the per-model fits of
// `prefixsim calibrate data/claude-code-ttft --json`, and which models borrow a sibling's fit.

/// Fits per model preset, sorted by name: `prefixsim calibrate data/claude-code-ttft --json`
/// (`overhead_s`, the rates, and `overhead_s + residual_quantiles_s` clamped at 0).
pub const FITS: [Fit; 5] = [
    Fit {
        fitted_on: "claude-haiku-4.5",
        sessions: 6,
        identified: true,
        requests: 102,
        overhead_s: 1.0447,
        overhead: Overhead { body_s: [0.321, 0.488, 0.575, 0.711, 0.753, 0.796, 0.89, 0.922, 0.968, 1.033, 1.064, 1.093, 1.162, 1.244, 1.308, 1.509, 1.577, 1.66, 1.887], p_tail: 0.9, scale_s: 0.5, shape: 0.1, max_s: 600.0 },
        prefill_rate: 26630.1,
        cached_rate: None,
        draws: &[],
        decode_rate: Some(140.4),
    },
    Fit {
        fitted_on: "claude-opus-4.1",
        sessions: 4,
        identified: false,
        requests: 14,
        overhead_s: 2.9382,
        overhead: Overhead { body_s: [2.098, 2.224, 2.315, 2.394, 2.461, 2.494, 2.608, 2.885, 2.938, 2.938, 2.938, 2.966, 3.024, 3.163, 3.252, 3.308, 3.323, 3.331, 3.458], p_tail: 0.9, scale_s: 0.5, shape: 0.1, max_s: 600.0 },
        prefill_rate: 8922.0,
        cached_rate: Some(573392.8),
        draws: &[],
        decode_rate: Some(57.3),
    },
    Fit {
        fitted_on: "claude-opus-4.5",
        sessions: 26,
        identified: true,
        requests: 408,
        overhead_s: 2.3287,
        overhead: Overhead { body_s: [1.314, 1.494, 1.614, 1.7, 1.794, 1.913, 2.015, 2.15, 2.241, 2.297, 2.347, 2.405, 2.486, 2.571, 2.647, 2.79, 2.968, 3.271, 3.957], p_tail: 0.9, scale_s: 0.5, shape: 0.1, max_s: 600.0 },
        prefill_rate: 90188.9,
        cached_rate: None,
        draws: &[],
        decode_rate: Some(57.9),
    },
    Fit {
        fitted_on: "claude-sonnet-4",
        sessions: 11,
        identified: true,
        requests: 378,
        overhead_s: 1.3609,
        overhead: Overhead { body_s: [0.891, 1.048, 1.115, 1.158, 1.188, 1.22, 1.256, 1.288, 1.317, 1.347, 1.381, 1.427, 1.481, 1.531, 1.571, 1.645, 1.761, 1.871, 2.189], p_tail: 0.9, scale_s: 0.5, shape: 0.1, max_s: 600.0 },
        prefill_rate: 71155.5,
        cached_rate: Some(147008.7),
        draws: &[],
        decode_rate: Some(72.7),
    },
    Fit {
        fitted_on: "claude-sonnet-4.5",
        sessions: 23,
        identified: true,
        requests: 267,
        overhead_s: 1.832,
        overhead: Overhead { body_s: [0.934, 1.115, 1.208, 1.28, 1.358, 1.431, 1.525, 1.624, 1.694, 1.765, 1.863, 1.953, 2.026, 2.15, 2.323, 2.418, 2.595, 2.925, 3.563], p_tail: 0.9, scale_s: 0.5, shape: 0.1, max_s: 600.0 },
        prefill_rate: 46240.4,
        cached_rate: Some(144892.6),
        draws: &[],
        decode_rate: Some(55.3),
    },
];

