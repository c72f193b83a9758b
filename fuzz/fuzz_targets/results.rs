//! libFuzzer target `results`: see `prefixsim_fuzz::results` (and fuzz/README.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| prefixsim_fuzz::results(data));
