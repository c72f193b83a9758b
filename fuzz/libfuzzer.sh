#!/usr/bin/env bash
# Run the libFuzzer targets on a nightly toolchain without the cargo-fuzz binary: the same
# build flags `cargo fuzz build` passes (coverage instrumentation, AddressSanitizer, debug
# assertions and overflow checks), then each target for a bounded time.
#
# Usage (from anywhere):  fuzz/libfuzzer.sh [SECONDS_PER_TARGET] [TARGET...]
#   default: 60 seconds for each of the six targets; corpora in fuzz/corpus/<target>/
#   (seeded from the smoke run's seeds), crashes in fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"
secs=${1:-60}
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  targets=(experiment sweep_spec trace_mooncake trace_claude_code trace_requests results)
fi
triple=$(rustc +nightly -vV | sed -n 's/^host: //p')
# Seed corpora: the smoke run's seeds, written out (a stable build of `smoke`).
cargo run --quiet --release --no-default-features --bin smoke --target-dir ../target -- \
  --write-seeds corpus
flags="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Zsanitizer=address \
-Cdebug-assertions -Coverflow-checks -Cforce-frame-pointers"
RUSTFLAGS="$flags" cargo +nightly build --release --target "$triple" \
  --target-dir target/libfuzzer $(printf -- '--bin %s ' "${targets[@]}")
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  echo "== $t ($secs s)"
  "target/libfuzzer/$triple/release/$t" "corpus/$t" -max_total_time="$secs" \
    -artifact_prefix="artifacts/$t/" -max_len=65536 -timeout=20 -rss_limit_mb=4096 \
    -print_final_stats=1
done
