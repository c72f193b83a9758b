//! libFuzzer target `sweep_spec`: see `prefixsim_fuzz::sweep_spec` (and fuzz/README.md).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| prefixsim_fuzz::sweep_spec(data));
