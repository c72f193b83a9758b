//! libFuzzer target `trace_claude_code`: see `prefixsim_fuzz::trace_claude_code` (and fuzz/README.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| prefixsim_fuzz::trace_claude_code(data));
