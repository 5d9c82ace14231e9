#!/usr/bin/env bash
# Every benchmark of the workspace, built once and run on any x86-64 Linux machine
# (no Rust needed where they run), with one table per machine that names its CPU.
#
#   benches/run.sh build [DIR]     build every bench binary (release) into DIR,
#                                  default target/bench-bin, with this script and
#                                  report.py beside them
#   DIR/run.sh run [--quick] [--scale N,N,..] [--out OUT]
#                                  run them here; prints the table and writes
#                                  OUT/bench-<host>.md and .json (OUT: DIR/results)
#   benches/run.sh all [...]       build, then run
#
# Carry DIR to another machine (the GPU machine's host, say) and run DIR/run.sh run
# there: the same binaries, so the two tables compare the machines, not two builds.
# Ratios are taken within one run of one binary, as the goals are stated.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

build() {
    local root dir
    root=$(cd "$here/.." && pwd)
    dir=${1:-$root/target/bench-bin}
    mkdir -p "$dir"
    # One build of every bench target; their paths come from cargo's JSON messages.
    (cd "$root" && cargo bench --workspace --no-run --message-format=json-render-diagnostics) |
        python3 -c '
import json, os, shutil, sys
dest = sys.argv[1]
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
            and "bench" in msg["target"]["kind"]:
        shutil.copy2(msg["executable"], os.path.join(dest, msg["target"]["name"]))
        print("  ", msg["target"]["name"], file=sys.stderr)
' "$dir"
    # The instrument bench again without prof's `enable` feature: its annotations
    # compiled out, timed against an empty loop.
    (cd "$root" && cargo bench -p prof-ml --bench instrument --no-default-features --features tracing \
        --no-run --message-format=json-render-diagnostics) |
        python3 -c '
import json, shutil, sys
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
            and msg["target"]["name"] == "instrument":
        shutil.copy2(msg["executable"], sys.argv[1])
        print("   instrument_compiled_out", file=sys.stderr)
' "$dir/instrument_compiled_out"
    cp "$here/run.sh" "$here/report.py" "$dir/"
    (cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo unknown) > "$dir/COMMIT"
    echo "bench binaries in $dir ($(du -sh "$dir" | cut -f1)); run: $dir/run.sh run" >&2
}

run() {
    local dir=$here quick="" scale="1000000,10000000" out=""
    while [ $# -gt 0 ]; do
        case $1 in
            --quick) quick=--quick ;;
            --scale) scale=$2; shift ;;
            --out) out=$2; shift ;;
            *) echo "run.sh run: unknown argument '$1'" >&2; exit 2 ;;
        esac
        shift
    done
    if [ ! -x "$dir/annotation" ]; then
        dir=$(cd "$here/.." && pwd)/target/bench-bin
        [ -x "$dir/annotation" ] || { echo "no bench binaries: run '$0 build' first" >&2; exit 2; }
    fi
    out=${out:-$dir/results}
    local work=$out/run-$(hostname)
    rm -rf "$work"
    mkdir -p "$work"
    # Criterion writes its estimates under $CARGO_TARGET_DIR/criterion; the benches'
    # own ratio tables read them back from there.
    export CARGO_TARGET_DIR=$work
    local b
    for b in annotation objects layer instrument instrument_compiled_out xplane lanes diff callback; do
        echo "== $b" >&2
        (cd "$work" && "$dir/$b" --bench --noplot $quick) > "$work/$b.log" 2>&1 ||
            { tail -20 "$work/$b.log" >&2; exit 1; }
    done
    echo "== scale ($scale events)" >&2
    "$dir/scale" --bench --events "$scale" > "$work/scale.log" 2>&1 ||
        { tail -20 "$work/scale.log" >&2; exit 1; }
    echo "== export_memory" >&2
    "$dir/export_memory" --bench > "$work/export_memory.log" 2>&1 ||
        { tail -20 "$work/export_memory.log" >&2; exit 1; }
    echo "== stop (a GPU session's CPU side)" >&2
    "$dir/stop" --bench --launches 10000,100000 > "$work/stop.log" 2>&1 ||
        { tail -20 "$work/stop.log" >&2; exit 1; }
    local py=${PYTHON:-python3}
    "$py" "$dir/report.py" "$work" --commit "$(cat "$dir/COMMIT" 2>/dev/null || echo unknown)" \
        --md "$out/bench-$(hostname).md" --json "$out/bench-$(hostname).json"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
    build) build "$@" ;;
    run) run "$@" ;;
    all) build; run "$@" ;;
    *) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
