#!/usr/bin/env bash
# Print the fenced code block that docs/scale-out.md marks with `<!-- e2e:NAME begin ... -->` and
# `<!-- e2e:NAME end -->` (the recipes .ci/slurm-e2e.sh and .ci/k8s-validate.sh run as written).
# Usage: readme-block.sh NAME; exit 1 when there is no such block.
set -euo pipefail
readme="$(cd "$(dirname "$0")/.." && pwd)/docs/scale-out.md"
block=$(awk -v m="e2e:$1" '
  index($0, "<!-- " m " begin") { inside = 1; next }
  index($0, "<!-- " m " end") { inside = 0 }
  inside && /^```/ { fence = !fence; next }
  inside && fence { print }' "$readme")
[ -n "$block" ] || { echo "docs/scale-out.md: no code block between the e2e:$1 markers" >&2; exit 1; }
printf '%s\n' "$block"
