//! libFuzzer target `experiment`: see `prefixsim_fuzz::experiment` (and fuzz/README.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| prefixsim_fuzz::experiment(data));
