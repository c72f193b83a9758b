// Generated data for `latency_presets.rs` (included there): the per-model fits of
// `prefixsim calibrate data/claude-code-ttft --json`, and which models borrow a sibling's fit.

/// Fits per model preset, sorted by name (generated from `prefixsim calibrate data/claude-code-ttft`).
pub const FITS: [Fit; 5] = [
    Fit {
        fitted_on: "claude-haiku-4.5",
        requests: 102,
        overhead_s: 1.045,
        overhead_quantiles_s: [0.321, 0.489, 0.575, 0.711, 0.753, 0.796, 0.890, 0.922, 0.968, 1.033, 1.064, 1.093, 1.162, 1.244, 1.308, 1.509, 1.577, 1.660, 1.887, 2.340],
        prefill_rate: 26627.0,
        cached_rate: None,
        decode_rate: Some(126.6),
    },
    Fit {
        fitted_on: "claude-opus-4.1",
        requests: 14,
        overhead_s: 2.938,
        overhead_quantiles_s: [2.098, 2.224, 2.315, 2.394, 2.461, 2.494, 2.608, 2.885, 2.938, 2.938, 2.938, 2.966, 3.023, 3.163, 3.252, 3.308, 3.323, 3.331, 3.458, 6.696],
        prefill_rate: 8921.0,
        cached_rate: Some(573262.0),
        decode_rate: Some(55.9),
    },
    Fit {
        fitted_on: "claude-opus-4.5",
        requests: 408,
        overhead_s: 2.329,
        overhead_quantiles_s: [1.314, 1.494, 1.614, 1.699, 1.794, 1.913, 2.015, 2.150, 2.241, 2.297, 2.347, 2.405, 2.486, 2.571, 2.647, 2.790, 2.968, 3.271, 3.957, 4.853],
        prefill_rate: 90168.0,
        cached_rate: None,
        decode_rate: Some(56.3),
    },
    Fit {
        fitted_on: "claude-sonnet-4",
        requests: 378,
        overhead_s: 1.364,
        overhead_quantiles_s: [0.895, 1.051, 1.118, 1.159, 1.189, 1.222, 1.259, 1.289, 1.320, 1.350, 1.382, 1.430, 1.485, 1.534, 1.572, 1.648, 1.766, 1.874, 2.190, 2.986],
        prefill_rate: 71529.0,
        cached_rate: Some(147850.0),
        decode_rate: Some(68.5),
    },
    Fit {
        fitted_on: "claude-sonnet-4.5",
        requests: 267,
        overhead_s: 1.832,
        overhead_quantiles_s: [0.934, 1.115, 1.208, 1.280, 1.358, 1.431, 1.525, 1.624, 1.694, 1.765, 1.863, 1.953, 2.027, 2.150, 2.323, 2.418, 2.595, 2.925, 3.563, 5.644],
        prefill_rate: 46241.0,
        cached_rate: Some(144890.0),
        decode_rate: Some(55.8),
    },
];

/// Models with no measurements, and the measured model whose fit they use: the nearest
/// sibling of the same family (same serving tier), a named assumption.
pub const BORROWED: [(&str, &str); 12] = [
    ("claude-fable-5", "claude-opus-4.5"),
    ("claude-fable-5.1", "claude-opus-4.5"),
    ("claude-haiku-3.5", "claude-haiku-4.5"),
    ("claude-mythos-5", "claude-opus-4.5"),
    ("claude-mythos-5.1", "claude-opus-4.5"),
    ("claude-opus-4", "claude-opus-4.1"),
    ("claude-opus-4.6", "claude-opus-4.5"),
    ("claude-opus-4.7", "claude-opus-4.5"),
    ("claude-opus-4.8", "claude-opus-4.5"),
    ("claude-opus-5", "claude-opus-4.5"),
    ("claude-sonnet-4.6", "claude-sonnet-4.5"),
    ("claude-sonnet-5", "claude-sonnet-4.5"),
];
