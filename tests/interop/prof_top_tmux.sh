#!/usr/bin/env bash
# prof-top in a real terminal (tmux), against serve_training, read back with
# capture-pane: connected with op names, the step number growing, a capture (xprof's
# client and capture-profile) running while it watches and said on screen, `c`
# capturing from the view itself, the server
# killed ("reconnecting") and restarted (connected again), `q` leaving the normal
# screen with status 0, and a 60x20 terminal still showing the step time.
#
# Usage: tests/interop/prof_top_tmux.sh PROF_TOP CAPTURE_PROFILE SERVE_TRAINING PYTHON OUTDIR
# Writes OUTDIR/prof-top.txt (a screen, for the guide). Exit 0 when every check holds.
set -euo pipefail
prof_top=$1 capture_profile=$2 serve_training=$3 python=$4 out=$5
mkdir -p "$out"
session=prof-top-ci-$$
small=prof-top-ci-small-$$
fail() { echo "prof_top_tmux: FAIL: $*" >&2; tmux capture-pane -p -t "$session" >&2 2>/dev/null || true; exit 1; }
cleanup() {
    tmux kill-session -t "$session" 2>/dev/null || true
    tmux kill-session -t "$small" 2>/dev/null || true
    kill "${serve_pid:-}" 2>/dev/null || true
}
trap cleanup EXIT

serve() { # serve PORT: starts serve_training, sets serve_pid and port
    "$serve_training" --port "$1" --seconds 90 > "$out/serve_training.out" 2>&1 &
    serve_pid=$!
    port=""
    for _ in $(seq 1 100); do
        port=$(sed -n 's/^listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$out/serve_training.out")
        [ -n "$port" ] && return 0
        sleep 0.1
    done
    fail "serve_training did not start: $(cat "$out/serve_training.out")"
}
screen() { tmux capture-pane -p -t "${1:-$session}"; }
# wait_for TEXT [SECONDS] [SESSION]: until the screen shows TEXT.
wait_for() {
    local deadline=$((SECONDS + ${2:-10}))
    while [ "$SECONDS" -lt "$deadline" ]; do
        screen "${3:-$session}" | grep -q -- "$1" && return 0
        sleep 0.2
    done
    fail "the screen never showed '$1'"
}
step_number() { screen | sed -n 's/.* step \([0-9][0-9]*\) .*/\1/p' | head -n 1; }

serve 0
tmux new-session -d -s "$session" -x 100 -y 30 \
    "$prof_top 127.0.0.1:$port --logdir $out/logs; echo \"prof-top exited \$?\"; sleep 60"
wait_for " connected " 10
wait_for "load_batch" 10
wait_for "forward" 5
# No --kernels: the watched process traces no kernels, and the line says how to ask.
wait_for "Kernels    off: prof-top --kernels" 5
first=$(step_number)
sleep 2.5
second=$(step_number)
[ -n "$first" ] && [ -n "$second" ] && [ "$second" -gt "$first" ] \
    || fail "the step number did not grow: '$first' then '$second'"
screen > "$out/prof-top.txt"

# Captures while it watches: XProf's Capture button's call, then capture-profile.
"$python" tests/interop/xprof_capture.py --address "localhost:$port" \
    --logdir "$out/xprof_capture" --duration-ms 1000 >/dev/null \
    || fail "xprof's capture failed while prof-top watched"
"$capture_profile" "127.0.0.1:$port" --duration-ms 3000 --summary 0 --logdir "$out/capture" >/dev/null &
capture_pid=$!
wait_for "capture running" 5
wait "$capture_pid" || fail "capture-profile failed while prof-top watched"
wait_for "no capture" 5
# c: prof-top's own capture (capture-profile beside it), with its progress.
tmux send-keys -t "$session" c
wait_for "capturing" 5
wait_for "capture written to" 20
ls "$out"/logs/plugins/profile/*/*.xplane.pb >/dev/null 2>&1 || fail "c wrote no .xplane.pb under $out/logs"

# The server goes away, and comes back on the same port.
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
wait_for "reconnecting" 10
serve "$port"
wait_for " connected " 15
wait_for "load_batch" 10

# q: status 0, and the normal screen back (nothing of the view left on it).
tmux send-keys -t "$session" q
wait_for "prof-top exited 0" 5
[ "$(tmux display -p -t "$session" '#{alternate_on}')" = 0 ] || fail "still on the alternate screen"
screen | grep -q "Top ops" && fail "the view is still on the normal screen"

# A small terminal: the step time still shows, and no panic.
tmux new-session -d -s "$small" -x 60 -y 20 \
    "$prof_top 127.0.0.1:$port 2>$out/small.err; echo \"prof-top exited \$?\"; sleep 60"
wait_for "Step time  last" 10 "$small"
screen "$small" > "$out/prof-top-60x20.txt"
tmux send-keys -t "$small" q
wait_for "prof-top exited 0" 5 "$small"
grep -q panicked "$out/small.err" && fail "prof-top panicked at 60x20: $(cat "$out/small.err")"
echo "prof_top_tmux: ok"
