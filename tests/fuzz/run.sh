#!/usr/bin/env bash
# Coverage-guided fuzzing of the XSpace reader and the exporters, on stable Rust.
#
# usage: tests/fuzz/run.sh [SECONDS] [EXTRA_SEED_DIR...]
#
# Builds the targets of fuzz/ (libFuzzer through libfuzzer-sys, with the coverage
# flags cargo-fuzz passes for sanitizer "none") into fuzz/target, then runs each for
# SECONDS (default 60) on a fresh copy of its committed seeds (fuzz/corpus/<target>),
# its past crashes (fuzz/regressions/<target>), the JAX capture CI made earlier
# (target/ci-logs/capture_jax, when present) and every .xplane.pb under the
# EXTRA_SEED_DIRs. Prints the executions of each target; exits non-zero when one
# crashed, hung, or ran out of memory, naming the input that did it.
#
# Needs Rust stable, a C++ compiler (libfuzzer-sys compiles libFuzzer with cc) and
# crates.io. Environment:
#   FUZZ_TARGETS  targets to run (default: all three)
#   FUZZ_NICE     niceness of the build and the runs (default 10)
#   FUZZ_ARGS     extra libFuzzer flags, e.g. "-seed=1 -jobs=2"
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fuzz=$root/fuzz
seconds=${1:-60}
[ $# -gt 0 ] && shift
case $seconds in
'' | *[!0-9]*)
    echo "usage: $0 [SECONDS] [EXTRA_SEED_DIR...]" >&2
    exit 2
    ;;
esac
targets=${FUZZ_TARGETS:-xplane_decode exporters exporters_structured}
nice_level=${FUZZ_NICE:-10}
# The targets that read .xplane.pb bytes; exporters_structured reads arbitrary's format.
byte_targets=" xplane_decode exporters "

triple=$(rustc -vV | sed -n 's/^host: //p')
# What cargo-fuzz passes for `--sanitizer none` on Linux, plus overflow checks: every
# one of them is a stable codegen option. `--target` keeps them off build scripts.
flags="--cfg fuzzing -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4"
flags+=" -Cllvm-args=-sanitizer-coverage-inline-8bit-counters"
flags+=" -Cllvm-args=-sanitizer-coverage-pc-table"
flags+=" -Cllvm-args=-sanitizer-coverage-trace-compares"
flags+=" -Cllvm-args=-simplifycfg-branch-fold-threshold=0"
case $triple in *-linux-*) flags+=" -Cllvm-args=-sanitizer-coverage-stack-depth" ;; esac
flags+=" -Cdebug-assertions -Coverflow-checks"

bins=()
for t in $targets; do bins+=(--bin "$t"); done
echo "== building ${targets} (${triple})"
start=$SECONDS
if ! RUSTFLAGS="$flags" CARGO_TARGET_DIR="$fuzz/target" nice -n "$nice_level" \
    cargo build --locked --release --manifest-path "$fuzz/Cargo.toml" \
    --target "$triple" "${bins[@]}"; then
    echo "fuzz: the build failed" >&2
    exit 1
fi
echo "== built in $((SECONDS - start)) s"

# Seeds from outside the repository: CI's JAX capture, and the directories given.
extra=()
[ -d "$root/target/ci-logs/capture_jax" ] && extra+=("$root/target/ci-logs/capture_jax")
extra+=("$@")

failed=()
summary=()
for t in $targets; do
    bin=$fuzz/target/$triple/release/$t
    work=$fuzz/target/fuzz-run/$t
    rm -rf "$work"
    mkdir -p "$work/corpus" "$work/artifacts"
    for d in "$fuzz/corpus/$t" "$fuzz/regressions/$t"; do
        [ -d "$d" ] && find "$d" -type f -exec cp {} "$work/corpus/" \;
    done
    if [[ $byte_targets == *" $t "* ]]; then
        for d in "${extra[@]}"; do
            [ -e "$d" ] || { echo "fuzz: no seed directory $d" >&2; exit 2; }
            # Flattened: same-named files of different runs keep a numbered prefix.
            n=0
            while IFS= read -r -d '' f; do
                n=$((n + 1))
                cp "$f" "$work/corpus/extra-$n-$(basename "$f")"
            done < <(find "$d" -type f -name '*.xplane.pb' -print0)
        done
    fi
    seeds=$(find "$work/corpus" -type f | wc -l)
    # Inputs up to 64 KiB (libFuzzer's default is 4 KiB here): some failures need
    # thousands of events. Larger seeds (a JAX capture) raise it to their size.
    largest=$(find "$work/corpus" -type f -printf '%s\n' | sort -n | tail -n 1)
    max_len=$(( ${largest:-0} > 65536 ? ${largest:-0} : 65536 ))
    echo "== $t: ${seconds} s from ${seeds} seeds"
    # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
    nice -n "$nice_level" "$bin" "$work/corpus" \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
        -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
        ${FUZZ_ARGS:-} >"$work/log" 2>&1
    rc=$?
    grep -E '^(stat::|Done [0-9]+ runs)' "$work/log"
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/log" | tail -n 1)
    rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$work/log" | tail -n 1)
    units=$(find "$work/corpus" -type f | wc -l)
    line="$t: ${execs:-?} execs, ${rate:-?} exec/s, corpus ${seeds} -> ${units}, peak RSS ${rss:-?} MB"
    found=$(find "$work/artifacts" -type f \( -name 'crash-*' -o -name 'timeout-*' \
        -o -name 'oom-*' -o -name 'leak-*' \) | sort)
    if [ "$rc" -ne 0 ] || [ -n "$found" ]; then
        line+=", FAILED (exit $rc)"
        failed+=("$t")
        while IFS= read -r f; do
            [ -n "$f" ] || continue
            line+=$'\n'"    input: $f ($(wc -c <"$f") bytes); reproduce: $bin $f"
            # A saved crash that is back (or not fixed yet) is named as such.
            if [ -d "$fuzz/regressions/$t" ]; then
                while IFS= read -r -d '' r; do
                    cmp -s "$f" "$r" && line+=$'\n'"    it is the saved regression ${r#"$root"/}"
                done < <(find "$fuzz/regressions/$t" -type f -print0)
            fi
            # The target dir may not outlive CI: the input itself, when small.
            if [ "$(wc -c <"$f")" -le 4096 ]; then
                line+=$'\n'"    base64: $(base64 -w0 "$f")"
            fi
        done <<<"$found"
        [ -z "$found" ] && line+=$'\n'"    no input saved"
        # What went wrong: the panic and the top of its backtrace, else libFuzzer's
        # report (timeouts, out-of-memory).
        if grep -q 'panicked at' "$work/log"; then
            grep -m1 -A24 'panicked at' "$work/log"
        else
            grep -m1 -A12 'ERROR: libFuzzer' "$work/log"
        fi
        echo "(the whole log: $work/log)"
    fi
    summary+=("$line")
done

echo "== fuzz summary (${seconds} s per target)"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: ${failed[*]} failed; minimize with <binary> -minimize_crash=1 -runs=10000 <input>," \
        "then save it under fuzz/regressions/<target>/ (see fuzz/README.md)" >&2
    exit 1
fi
echo "fuzz: ${#summary[@]} targets ran, none crashed"
