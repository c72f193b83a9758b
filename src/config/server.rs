//! The self-hosted server behind the `vllm` and `sglang` cache policies (`[server]`): its
//! parameters, the router and prefill-sharing rules, and the model presets that set the rates
//! (named assumptions, derived in docs/providers.md section 3).

use crate::cache::Policy;

/// How a request picks a replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Router {
    /// Replicas in turn, one request each (a plain load balancer).
    RoundRobin,
    /// The replica whose routed prefixes share the longest prefix with the request; ties to
    /// the least loaded, then the lowest index.
    PrefixAware,
}

impl Router {
    pub fn name(self) -> &'static str {
        match self {
            Router::RoundRobin => "round-robin",
            Router::PrefixAware => "prefix-aware",
        }
    }
}

/// How the prefills in flight on one replica share a step's token budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// First come, first served in budget-sized chunks (what vLLM and SGLang schedule): a
    /// prefill larger than the budget takes all of it until done.
    FcfsChunked,
    /// The budget split equally among the prefills in flight, all admitted at once.
    ProcessorSharing,
}

impl Sharing {
    pub fn name(self) -> &'static str {
        match self {
            Sharing::FcfsChunked => "fcfs-chunked",
            Sharing::ProcessorSharing => "processor-sharing",
        }
    }
}

/// One self-hosted deployment: `replicas` identical servers, each with its own KV cache.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerParams {
    /// The preset the rates came from (`server.model`).
    pub model: String,
    pub replicas: u32,
    pub gpus_per_replica: u32,
    pub router: Router,
    pub prefill_sharing: Sharing,
    /// Prefill tokens per second of one replica.
    pub prefill_tokens_per_s: f64,
    /// Prefill tokens one step may compute (vLLM `max_num_batched_tokens`, SGLang
    /// `chunked_prefill_size`).
    pub step_token_budget: u64,
    /// Fixed cost of one prefill step.
    pub step_overhead_us: u64,
    /// One decode step (one output token of every running sequence), before the slowdowns.
    pub decode_step_us: u64,
    /// Added to a decode step per running sequence.
    pub decode_per_running_us: u64,
    /// Added to a decode step per 1,000 tokens of context summed over the running sequences.
    pub decode_per_ktok_us: u64,
    /// KV memory of one replica, in tokens.
    pub kv_capacity_tokens: u64,
    /// Tokens per KV block: only full blocks are cached (vLLM 16, SGLang 1).
    pub block_tokens: u64,
    pub gpu_usd_per_hour: f64,
    /// Blocks a step computes are readable by requests scheduled later in the same step
    /// (vLLM adds a full block to the cache when it is allocated) rather than from the
    /// step's end (SGLang inserts a chunk into the radix tree after computing it). Set by
    /// the policy, not a key.
    pub same_step_reads: bool,
    /// Running decodes take one token each of a step's budget before the prefills, in one
    /// step loop (the vLLM V1 scheduler), rather than decoding beside the prefill steps
    /// (SGLang's rule as modelled). Set by the policy, not a key.
    pub decode_in_steps: bool,
}

/// The `server.model` presets: (name, gpus, prefill tok/s, decode step, per ktok, capacity).
const PRESETS: [(&str, u32, f64, u64, u64, u64); 2] = [
    // Llama 3.1 8B on one H100 (docs/providers.md section 3).
    ("llama-3.1-8b", 1, 20_000.0, 6_000, 40, 400_000),
    // Llama 3.1 70B on 4 x H100, tensor parallel.
    ("llama-3.1-70b", 4, 10_000.0, 10_500, 25, 400_000),
];

/// The preset names `server.model` accepts.
pub fn server_model_names() -> impl Iterator<Item = &'static str> {
    PRESETS.iter().map(|p| p.0)
}

/// The server of preset `model` under `policy`, every other key at its default; `None` for
/// an unknown preset.
pub fn server_preset(model: &str, policy: Policy) -> Option<ServerParams> {
    let &(name, gpus, prefill, decode, per_ktok, capacity) =
        PRESETS.iter().find(|p| p.0 == model)?;
    Some(ServerParams {
        model: name.to_string(),
        replicas: 1,
        gpus_per_replica: gpus,
        router: Router::RoundRobin,
        prefill_sharing: Sharing::FcfsChunked,
        prefill_tokens_per_s: prefill,
        step_token_budget: 8_192,
        step_overhead_us: 5_000,
        decode_step_us: decode,
        decode_per_running_us: 0,
        decode_per_ktok_us: per_ktok,
        kv_capacity_tokens: capacity,
        block_tokens: policy.default_block_tokens(),
        gpu_usd_per_hour: 2.50,
        same_step_reads: policy != Policy::Sglang,
        decode_in_steps: policy != Policy::Sglang,
    })
}
