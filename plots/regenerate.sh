#!/usr/bin/env bash
# Regenerate plots/ from experiments/: for each experiments/NAME.toml, `sweep` it (when it has a
# [sweep] table) or `run --trace` it, then `plot` its results into plots/NAME/ (each figure as
# SVG and PNG) and write the design-review report plots/NAME/README.md. experiments/default.toml
# is also tuned (`tune --param max_wait`) into plots/default-tune/, and the covered-prefix figure
# of the latency presets is drawn alone into plots/covered_prefix.{svg,png}.
#
# Usage (from anywhere):  plots/regenerate.sh [--quick]
#   --quick            5 replications per point instead of each file's own (a smoke test)
#   PREFIXSIM=path     use this binary instead of building target/release/prefixsim
#   RESULTS=dir        where the raw results go (default target/plots-results; not committed)
#   KEEP_HTML=1        keep plots/NAME/README.html (self-contained, figures as PNG data URIs)
# Deterministic: the same sources give the same bytes in plots/.
set -euo pipefail
cd "$(dirname "$0")/.."

sets=()
if [[ "${1:-}" == "--quick" ]]; then sets=(--set replications=5); fi
if [[ -z "${PREFIXSIM:-}" ]]; then
  cargo build --release --quiet
  PREFIXSIM=target/release/prefixsim
fi
bin=$PREFIXSIM
results=${RESULTS:-target/plots-results}
mkdir -p "$results"

publish() { # publish RESULTS_DIR NAME: figures and report into plots/NAME
  local dir=$1 name=$2
  rm -rf "plots/$name"
  "$bin" plot "$dir" --out "plots/$name" --format svg,png >/dev/null
  "$bin" report "$dir" --out "plots/$name/README.md" >/dev/null
  # The self-contained HTML embeds every figure as PNG (~1-2 MB): not kept in the repository
  # unless KEEP_HTML=1 (`prefixsim report` on the results makes it any time).
  if [[ "${KEEP_HTML:-0}" != 1 ]]; then rm -f "plots/$name/README.html"; fi
}

for exp in experiments/*.toml; do
  name=$(basename "$exp" .toml)
  out="$results/$name"
  rm -rf "$out"
  echo "== $name" >&2
  if grep -q '^\[sweep\]' "$exp"; then
    "$bin" sweep "$exp" --out "$out" "${sets[@]}" >/dev/null
  else
    "$bin" run "$exp" --out "$out" --trace "${sets[@]}" >/dev/null
  fi
  publish "$out" "$name"
done

echo "== covered_prefix" >&2
# Drawn into its own directory (`--out` takes an empty one), then copied beside the others.
"$bin" plot --covered-prefix --out "$results/covered_prefix" --force --format svg,png >/dev/null
cp "$results/covered_prefix/covered_prefix.svg" "$results/covered_prefix/covered_prefix.png" plots/

echo "== default-tune" >&2
rm -rf "$results/default-tune"
"$bin" tune experiments/default.toml --param max_wait \
  --out "$results/default-tune" "${sets[@]}" >/dev/null
publish "$results/default-tune" default-tune
echo "plots/ regenerated from experiments/ with $bin" >&2
