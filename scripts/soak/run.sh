#!/bin/bash
# Bounded soak / chaos run of the real `hermes` binary. Loopback only, stops by itself.
#   scripts/soak/run.sh [minutes]      (default 10 minutes of chaos, then ~3 min to settle)
# Env: SOAK_SEED (random seed), SOAK_WORKDIR (keep everything there; default a mktemp dir),
#      SOAK_QUIET (seconds of quiet phase, default 150),
#      SOAK_OUTAGES (Telegram outage windows in the chaos phase, default 2; 0 for none),
#      SOAK_OUTAGE_SECONDS (length of each window, default 40).
# Exit 0 when every must-be-zero count is 0, 1 otherwise, 2 on setup trouble.
set -euo pipefail
MINUTES=${1:-10}
QUIET=${SOAK_QUIET:-150}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
cargo build --release --quiet
ARGS=(--minutes "$MINUTES" --bin "$ROOT/target/release/hermes" --quiet "$QUIET"
      --outages "${SOAK_OUTAGES:-2}" --outage-seconds "${SOAK_OUTAGE_SECONDS:-40}")
[ -n "${SOAK_SEED:-}" ] && ARGS+=(--seed "$SOAK_SEED")
[ -n "${SOAK_WORKDIR:-}" ] && ARGS+=(--workdir "$SOAK_WORKDIR")
# Hard upper bound on the whole run: chaos + quiet + stop + checks, with margin.
LIMIT=$(python3 -c "print(int(float('$MINUTES') * 60 + $QUIET + 300))")
exec timeout --signal=TERM --kill-after=30 "$LIMIT" python3 "$ROOT/scripts/soak/soak.py" "${ARGS[@]}"
