//! libFuzzer target `trace_mooncake`: see `prefixsim_fuzz::trace_mooncake` (and fuzz/README.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| prefixsim_fuzz::trace_mooncake(data));
