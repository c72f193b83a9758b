//! The context-window check every trace reader applies to a request: input + output tokens
//! must fit the window of the model the request was sent to (its preset, found from the name
//! as the trace spells it; an unknown model is not checked). A request that does not fit is
//! an error naming the trace's line, or a skipped line under `--lenient` (the readers decide).

use crate::config::preset_for;

/// A request larger than its model's context window.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the request holds {tokens} tokens ({input_tokens} input + {output_tokens} output), more \
     than {model}'s context window of {window}: the API would refuse it"
)]
pub struct WindowError {
    pub tokens: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The preset's name.
    pub model: String,
    pub window: u64,
}

/// `Err` when `input + output` tokens exceed `model`'s context window.
pub fn check(model: &str, input_tokens: u64, output_tokens: u64) -> Result<(), WindowError> {
    let Some(m) = preset_for(model) else { return Ok(()) };
    // Recorded traffic was served: a window the model offers on request (Sonnet 4 / 4.5's 1M
    // beta) counts.
    let offered = m.long_context.as_ref().map_or(0, |l| l.window_tokens);
    let window = m.window_tokens().max(offered);
    let tokens = input_tokens.saturating_add(output_tokens);
    if tokens <= window {
        return Ok(());
    }
    Err(WindowError { tokens, input_tokens, output_tokens, model: m.name.clone(), window })
}
