//! libFuzzer target `trace_requests`: see `prefixsim_fuzz::trace_requests` (and fuzz/README.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| prefixsim_fuzz::trace_requests(data));
