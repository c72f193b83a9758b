#!/usr/bin/env bash
# Set up the SimPy peer's virtualenv (target/peer-venv, simpy pinned in requirements.txt) if it is
# missing, then run compare.py with it: prefixsim and the peer on benches/peer/fanout.toml, means
# side by side, speed per core. Arguments go to compare.py (e.g. --replications 20 for a quick run).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${PEER_VENV:-$root/target/peer-venv}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import simpy' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q -r "$root/benches/peer/requirements.txt"
fi
if [ ! -x "$root/target/release/prefixsim" ]; then
  (cd "$root" && cargo build --release)
fi
exec "$venv/bin/python" "$root/benches/peer/compare.py" "$@"
