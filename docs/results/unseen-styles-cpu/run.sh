#!/usr/bin/env bash
# Profile every script in scripts/ unmodified, with its own defaults, as a user would, and print each ADVICE block.
# From the repo root, on any machine: OUT=/tmp/unseen bash docs/results/unseen-styles-cpu/run.sh
set -uo pipefail
OUT=${OUT:-/tmp/unseen}; here=$(dirname "$0")
mkdir -p "$OUT"
for script in "$here"/scripts/*.py; do
    name=$(basename "$script" .py)
    [ "$name" = ad_1_hogwild_train ] && continue   # a module ad_1 imports, not a script
    args=(); [ "$name" = h_4_subcommands ] && args=(fit)   # its subcommand; every other script runs as it is
    python3 -m profiling run --formats text,json --output-dir "$OUT/$name" -- "$script" "${args[@]}" \
        > "$OUT/$name.log" 2>&1
    echo "== $name: exit $?"
    sed -n '/^ADVICE/,/(the curve, the other/p' "$OUT/$name.log"
    grep -m1 "dlkit-prof run: error" "$OUT/$name.log"
done
