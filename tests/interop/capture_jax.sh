#!/usr/bin/env bash
# capture-profile against a real JAX profiler server (jax.profiler.start_server),
# then xprof reads the file capture-profile wrote.
#
# usage: tests/interop/capture_jax.sh PYTHON CAPTURE_PROFILE LOGDIR
# Run it inside `unshare -n` where possible: JAX's server listens on every
# interface, and a fresh network namespace has loopback only.
set -euo pipefail
python=$1 capture=$2 logdir=$3
port=6019
out="$logdir.server.out"
rm -rf "$logdir"
mkdir -p "$(dirname "$logdir")"
"$python" tests/interop/jax_server.py --port "$port" --seconds 120 > "$out" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
    grep -q '^listening on' "$out" && break
    kill -0 "$server" 2>/dev/null || { echo "the JAX server exited:" >&2; cat "$out" >&2; exit 1; }
    sleep 0.1
done
grep -q '^listening on' "$out" || { echo "the JAX server did not start in 60 s:" >&2; cat "$out" >&2; exit 1; }
"$capture" "localhost:$port" --duration-ms 1000 --logdir "$logdir"
xplane=$(find "$logdir/plugins/profile" -name '*.xplane.pb' | head -n 1)
test -n "$xplane" || { echo "capture-profile wrote no file under $logdir" >&2; exit 1; }
# JAX names steps `train <n>` (StepTraceAnnotation); matmul_step is a TraceAnnotation.
"$python" tests/interop/xprof_check.py --xplane "$xplane" --expect-event matmul_step --min-steps 10
