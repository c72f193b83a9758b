//! `prefixsim scenarios`: the seed chapter's prefix-cache table and its three exercises,
//! computed by the cache core from real request bodies (see `crate::scenarios`).

use super::{CliResult, Error};
use crate::cache::Policy;
use crate::scenarios::{self, render, WorkloadName};

pub const EXAMPLES: &str =
    "  prefixsim scenarios                              # the seed demo's table, every-block cache
  prefixsim scenarios --workload claude-code       # the same questions with real proportions
  prefixsim scenarios --policy anthropic           # breakpoints, minimum length, lookback
  prefixsim scenarios --policy vllm                # a self-hosted server: whole 16-token KV blocks
  prefixsim scenarios --workload claude-code --policy anthropic --json | jq '.scenarios[]'
";

const AFTER_HELP: &str = "\
Scenarios: warmup, fork, fork_drop_bash, fork_edit_system, fresh_subagent, btw,
fork_reorder_tools, fork_deny_edit, btw_keep_tools, btw_drop_tools, btw_tool_choice_none.
The main session is warmed for 30 turns, then each request is looked up in that warm cache.
hit rate = cache_read / (cache_read + cache_write + uncached).";

/// The workloads on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WorkloadArg {
    /// The seed demo's proportions (80-token tools, about 9,100 tokens in all).
    #[default]
    Seed,
    /// Realistic Claude Code proportions (about 13,700 tokens of tools + system).
    ClaudeCode,
}

/// The cache policies on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PolicyArg {
    /// The seed demo's cache: every block boundary written, no minimum.
    #[default]
    EveryBlock,
    /// The Anthropic API: breakpoints, 20-block lookback, minimum cacheable length.
    Anthropic,
    /// OpenAI's classic automatic caching on gpt-5.4 (docs/providers.md).
    #[value(name = "openai")]
    OpenAi,
    /// Gemini's implicit caching on gemini-2.5-flash, every lookup hitting (no draws).
    Gemini,
    /// A self-hosted vLLM server's GPU cache: 16-token blocks, no TTL (docs/providers.md).
    Vllm,
    /// A self-hosted SGLang server's radix cache: single tokens, no TTL.
    Sglang,
}

#[derive(clap::Args, Debug, Default)]
#[command(after_help = super::reflow(AFTER_HELP))]
pub struct Args {
    /// Which embedded workload the main session and the scenarios use.
    #[arg(long, value_enum, default_value_t = WorkloadArg::Seed)]
    pub workload: WorkloadArg,
    /// Cache policy.
    #[arg(long, value_enum, default_value_t = PolicyArg::EveryBlock)]
    pub policy: PolicyArg,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> CliResult {
    let workload = match args.workload {
        WorkloadArg::Seed => WorkloadName::Seed,
        WorkloadArg::ClaudeCode => WorkloadName::ClaudeCode,
    };
    let policy = match args.policy {
        PolicyArg::EveryBlock => Policy::EveryBlock,
        PolicyArg::Anthropic => Policy::Anthropic,
        PolicyArg::OpenAi => Policy::OpenAi,
        PolicyArg::Gemini => Policy::Gemini,
        PolicyArg::Vllm => Policy::Vllm,
        PolicyArg::Sglang => Policy::Sglang,
    };
    // The workloads are embedded: an error here is a bug in the shipped data, not user input.
    let report = scenarios::run(workload, policy).map_err(Error::failed)?;
    let text = if args.json {
        super::sorted_json(render::to_json(&report))
    } else {
        render::table(&report)
    };
    super::stdout(text.as_bytes())
}
