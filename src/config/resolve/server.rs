//! `[server]`: the self-hosted `vllm` and `sglang` policies' deployment (config/server.rs), and
//! what an experiment served by one may not ask for.

use crate::cache::Policy;
use crate::config::call::did_you_mean;
use crate::config::error::{At, ConfigError};
use crate::config::experiment::{AgentKind, ExperimentSpec, Workload};
use crate::config::fields::GetOr;
use crate::config::file::ServerSection;
use crate::config::server::{server_model_names, server_preset, ServerParams};

impl ServerSection {
    /// `[server]`, from the `server.model` preset; read (and checked) whatever the policy.
    pub(super) fn validate(self, policy: Policy, s: At) -> Result<ServerParams, ConfigError> {
        let name = self.model.get_or("llama-3.1-8b".to_string());
        let Some(base) = server_preset(&name, policy) else {
            let hint = did_you_mean(&name, server_model_names())
                .map(|m| format!(" (did you mean `{m}`?)"))
                .unwrap_or_default();
            let names: Vec<&str> = server_model_names().collect();
            let why = format!("no server preset of that name{hint}; presets: {}", names.join(", "));
            return Err(s.bad_str("model", &name, why));
        };
        let p = ServerParams {
            replicas: self.replicas.get_or(base.replicas),
            gpus_per_replica: self.gpus_per_replica.get_or(base.gpus_per_replica),
            router: self.router.map_or(base.router, |r| r.0),
            prefill_sharing: self.prefill_sharing.map_or(base.prefill_sharing, |p| p.0),
            prefill_tokens_per_s: self.prefill_tokens_per_s.get_or(base.prefill_tokens_per_s),
            step_token_budget: self.step_token_budget.get_or(base.step_token_budget),
            step_overhead_us: self.step_overhead.get_or(base.step_overhead_us),
            decode_step_us: self.decode_step.get_or(base.decode_step_us),
            decode_per_running_us: self.decode_per_running.get_or(base.decode_per_running_us),
            decode_per_ktok_us: self.decode_per_ktok.get_or(base.decode_per_ktok_us),
            kv_capacity_tokens: self.kv_capacity_tokens.get_or(base.kv_capacity_tokens),
            block_tokens: self.block_tokens.get_or(base.block_tokens),
            gpu_usd_per_hour: self.gpu_usd_per_hour.get_or(base.gpu_usd_per_hour),
            same_step_reads: base.same_step_reads,
            decode_in_steps: base.decode_in_steps,
            model: name,
        };
        if p.prefill_tokens_per_s < 1.0 {
            let why = "at least 1 token per second";
            return Err(s.bad("prefill_tokens_per_s", p.prefill_tokens_per_s, why));
        }
        // A count of replicas or GPUs: 1 to 4,096.
        for (key, n) in [("replicas", p.replicas), ("gpus_per_replica", p.gpus_per_replica)] {
            if n > 4096 {
                return Err(s.bad(key, n, "at most 4096"));
            }
        }
        for (key, v) in [
            ("step_token_budget", p.step_token_budget),
            ("block_tokens", p.block_tokens),
            ("kv_capacity_tokens", p.kv_capacity_tokens),
        ] {
            if v == 0 {
                return Err(s.bad(key, 0, "must be at least 1"));
            }
        }
        Ok(p)
    }
}

/// What the server model does not cover: one model, no API rate limits or 529s, no isolated
/// misses, a frozen parent. `w` is the workload to check (`exp.workload`, or one a sweep value
/// changed).
pub(super) fn check_experiment(
    exp: &ExperimentSpec,
    w: &Workload,
    at: At,
) -> Result<(), ConfigError> {
    let why = "not modelled with cache.policy = \"vllm\" or \"sglang\" (a self-hosted server has no API limits, one model, and a frozen parent)";
    if exp.rate_limits.is_some() {
        return Err(at.bad("rate_limits", "[rate_limits]", why));
    }
    if exp.overload.is_some() {
        return Err(at.bad("overload", "[overload]", why));
    }
    if exp.cache.miss_probability > 0.0 {
        return Err(at.bad("cache.miss_probability", exp.cache.miss_probability, why));
    }
    if let AgentKind::ForkOtherModel { .. } = &w.kind {
        let value = format!("\"{}\"", crate::config::kind_label(&w.kind));
        return Err(at.bad("workload.kind", value, why));
    }
    if w.parent_turn_every_us > 0 {
        let v = format!("\"{}\"", crate::time::exact_duration(w.parent_turn_every_us));
        return Err(at.bad("workload.parent_turn_every", v, why));
    }
    Ok(())
}
