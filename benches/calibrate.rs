//! Calibrate benchmark: the 66 bundled Claude Code TTFT traces (`data/claude-code-ttft`, 0.7 MB
//! gzipped), parse and cache-read inference (5-minute TTL) included, then the per-model fits
//! with and without the attention column, 400 bootstrap resamples each, the tail fits and the
//! held-out comparison. Target: < 1 s on one core.

use std::path::{Path, PathBuf};

use prefixsim::calibrate::{self, Observations, Settings};

fn main() {
    divan::main();
}

fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/claude-code-ttft")
}

fn read() -> Observations {
    let mut data = Observations::default();
    calibrate::read(&traces(), None, &mut data).unwrap();
    data
}

#[divan::bench(sample_count = 10)]
fn parse_and_infer(bencher: divan::Bencher) {
    bencher.bench(|| read().obs.len());
}

#[divan::bench(sample_count = 10)]
fn fit_and_bootstrap(bencher: divan::Bencher) {
    let data = read();
    bencher.bench(|| calibrate::calibrate(&data, &Settings::default()).models.len());
}

#[divan::bench(sample_count = 10)]
fn whole_command(bencher: divan::Bencher) {
    bencher.bench(|| {
        let data = read();
        calibrate::calibrate(&data, &Settings::default()).models.len()
    });
}
