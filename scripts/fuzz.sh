#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for SECONDS each (default 600), one after the
# other, then minimizes each corpus back into fuzz/corpus/<target>/. Crashes, panics and
# timeouts land in fuzz/artifacts/<target>/ (ignored by git); the script exits non-zero
# if any target found one. See docs/FUZZING.md.
#
#   scripts/fuzz.sh            # 10 minutes per target
#   scripts/fuzz.sh 60         # a quick smoke run
#   TARGETS=deliver_target scripts/fuzz.sh 120
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-600}"
targets="${TARGETS:-schedule_parser jobs_json_loader jobs_json_fast_readers deliver_target job_service_checks mcp_line_parser}"

# cargo-fuzz passes nightly-only rustc flags (-Zsanitizer=address, sancov passes); this
# machine has only the stable toolchain, and RUSTC_BOOTSTRAP=1 lets stable accept them.
export RUSTC_BOOTSTRAP=1

command -v cargo-fuzz >/dev/null || {
    echo "cargo-fuzz is not installed: cargo install cargo-fuzz" >&2
    exit 2
}

failed=()
for target in $targets; do
    echo "== $target: ${seconds}s"
    mkdir -p "fuzz/corpus/$target"
    # -timeout: one input taking 30 s is a hang worth reporting, not a slow path.
    # New inputs go to fuzz/corpus/<target>; fuzz/seeds/<target> (hand-written, realistic
    # inputs) is read but never rewritten.
    if ! cargo fuzz run "$target" "fuzz/corpus/$target" "fuzz/seeds/$target" -- \
        -max_total_time="$seconds" -timeout=30 -print_final_stats=1; then
        failed+=("$target")
    fi
    # Keep the stored corpus small: only inputs that add an edge (-use_counters=0 ignores
    # hit counts, which cuts the corpus by about 3x for the same edge coverage).
    cargo fuzz cmin "$target" "fuzz/corpus/$target" -- -use_counters=0
    echo "   corpus: $(find "fuzz/corpus/$target" -type f | wc -l) files"
done

if ((${#failed[@]})); then
    echo "findings in: ${failed[*]} (see fuzz/artifacts/)" >&2
    exit 1
fi
