#!/usr/bin/env bash
# The GPU half of the checks, on a machine with an NVIDIA GPU and no Rust: the binaries
# are built here and carried there in one compressed bundle.
#
#   examples/gpu_checks.sh build [DIR]   # here, no CUDA needed: cuda_matmul (against
#                                        # CUDA 13.0's CUPTI structs), candle_cuda
#                                        # (examples/build_candle_cuda.sh) and the GPU
#                                        # tracer's and allocator's bench binaries,
#                                        # stripped, into DIR/bundle.tar.xz
#                                        # (default target/gpu-carry)
#   examples/gpu_checks.sh run DIR OUT   # there: everything below; OUT gets
#                                        # gpu-checks.log and profiles.tar.gz
#
# What `run` does, each step's output in the log (each binary checks its own profile
# and exits non-zero when it is wrong):
#  1. cuda_matmul, 100 steps, then a CUDA graph captured once and replayed 20 steps
#     (--graph: the replayed kernels must carry their capture's ops), with NVTX ranges
#     the program pushes itself (--nvtx, gpu_enable_nvtx_tracking, NVTX_INJECTION64_PATH
#     naming libcupti: the ranges on the NVTX lines, the kernels inside them carrying
#     nvtx_range), written also as Perfetto and Chrome JSON;
#  2. the graph again with gpu_enable_cupti_activity_graph_trace=true (one
#     CudaGraphExec event per replay) and gpu_dump_graph_node_mapping=true;
#  3. PM sampling of two metrics (gpu_pm_sample_counters);
#  4. gpu_trace_all_api_calls=true (whole callback domains);
#  5. candle_cuda: a candle-nn transformer trained on the GPU, its kernels attributed,
#     its memory beside the driver's;
#  6. cuda_matmul --overhead 10000,100000 --rounds 21: untraced, prof, and CUPTI's own
#     floor (kernel activity alone; with launch callbacks) in alternated rounds;
#  7. the benches of the launch callback, the scope hook, the tracking allocator and
#     stop's CPU side (10k and 100k launches) on this machine's host CPU;
#  8. the live view: `prof-top --kernels` (text, then --json into OUT/prof-top.json)
#     watching `cuda_matmul --serve`: NVML's GPUs and CUPTI's kernel time in a frame;
#  9. the stack sampler's cost on this host's CPU (docs/cost.md's goals: <= 1.01 at
#     99 Hz, <= 1.02 at 1 kHz with perf), with kernel.perf_event_paranoid.
# The CUDA libraries are looked for under $CUDA_LIB (default
# /usr/local/cuda/targets/x86_64-linux/lib).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

build() {
    local dir=${1:-$root/target/gpu-carry}
    local stage
    stage=$(mktemp -d)
    mkdir -p "$dir"
    # CUDA 13.0's CUPTI, the machine's: newer headers' structs grew (PM sampling's
    # params among them). cudarc takes the version from this variable; candle's build
    # below gets the same from nvcc 13.0, so both share one cudarc build.
    export CUDARC_CUDA_VERSION=13000
    (cd "$root" && cargo build --release --features cuda --example cuda_matmul) || exit 1
    cp "$root/target/release/examples/cuda_matmul" "$stage/"
    cp "$("$here/build_candle_cuda.sh" | tail -1)" "$stage/" || exit 1
    (cd "$root" && cargo bench --no-run -p profiler-cuda --bench callback --bench stop \
        -p profiler-core --bench objects -p profiler-sampling --bench sampling \
        --message-format=json-render-diagnostics) |
        python3 -c '
import json, shutil, sys, os
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
            and "bench" in msg["target"]["kind"]:
        shutil.copy2(msg["executable"], os.path.join(sys.argv[1], "bench-" + msg["target"]["name"]))
' "$stage" || exit 1
    (cd "$root" && cargo build --release -p prof-cli --bin prof-top) || exit 1
    cp "$root/target/release/prof-top" "$stage/"
    strip "$stage"/cuda_matmul "$stage"/prof-top "$stage"/bench-* 2>/dev/null
    cp "$here/gpu_checks.sh" "$stage/"
    (cd "$root" && git rev-parse --short HEAD) > "$stage/COMMIT"
    tar -C "$stage" -cJf "$dir/bundle.tar.xz" .
    rm -rf "$stage"
    ls -la "$dir"
}

# Starts SERVER... (a program printing `listening on ADDR`), watches it with
# `prof-top --kernels` (the screen, then JSON into OUT/prof-top.json) and checks the
# JSON: a connected host with steps, and GPUs and kernel time where there is a GPU.
live_check() {
    local top=$1 out=$2
    shift 2
    local log
    log=$(mktemp)
    "$@" > "$log" 2>&1 &
    local pid=$! addr="" i
    for i in $(seq 1 300); do
        addr=$(sed -n 's/^listening on //p' "$log" | head -1)
        [ -n "$addr" ] && break
        sleep 0.1
    done
    if [ -z "$addr" ]; then
        echo "live_check: '$*' never said 'listening on':"; cat "$log"
        kill "$pid" 2>/dev/null; rm -f "$log"; return 1
    fi
    "$top" "$addr" --once --kernels --wait-ms 10000
    "$top" "$addr" --json --kernels --wait-ms 10000 > "$out/prof-top.json"
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rm -f "$log"
    python3 - "$out/prof-top.json" <<'PY'
import json, sys
host = json.load(open(sys.argv[1]))["hosts"][0]
print("state", host["state"], "step", host.get("step"))
print("gpus", host.get("gpus"), host.get("gpus_unavailable", ""))
print("kernels", host.get("kernels"), host.get("kernels_unavailable", ""))
assert host["state"] == "connected" and host.get("step") is not None, host
if host.get("gpus"):
    assert host["gpus"][0].get("busy_percent") is not None, host["gpus"]
    kernels = host.get("kernels") or []
    assert kernels and kernels[0]["kernel_ms"] > 0 and kernels[0]["kernels"] > 0, host
    print("live view: GPU", kernels[0]["device"], "ran its kernels",
          round(100 * kernels[0]["kernel_ms"] / kernels[0]["interval_ms"], 1),
          "% of the time; NVML says", host["gpus"][0]["busy_percent"], "%")
else:
    print("live view: no GPU here; kernels:", host.get("kernels_unavailable"))
PY
}

run() {
    local dir=${1:?usage: gpu_checks.sh run DIR OUT} out=${2:?usage: gpu_checks.sh run DIR OUT}
    local lib=${CUDA_LIB:-/usr/local/cuda/targets/x86_64-linux/lib}
    local work bin
    work=$(mktemp -d)
    bin=$work/bin
    mkdir -p "$out" "$bin"
    tar -C "$bin" -xJf "$dir/bundle.tar.xz"
    export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # Libraries the toolkit lacks (libcurand, which candle loads) from the NVIDIA wheels
    # beside torch, after the toolkit's own.
    local d
    for d in /opt/torch/.venv/lib/python3*/site-packages/nvidia/*/lib; do
        [ -d "$d" ] && LD_LIBRARY_PATH+=:$d
    done
    local pm=sm__cycles_active.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed
    step() { printf '\n=== %s (%ss)\n' "$1" "$SECONDS"; }
    {
        step "machine"
        echo "prof $(cat "$bin/COMMIT")"
        nvidia-smi -L
        nvidia-smi --query-gpu=driver_version --format=csv,noheader
        lscpu | grep -E 'Model name|^CPU\(s\)'
        ls "$lib" | grep -E '^lib(cupti|cublas|curand|nvrtc)\.so' | xargs
        step "1. cuda_matmul: 100 steps, a CUDA graph replayed 20 steps, NVTX ranges"
        NVTX_INJECTION64_PATH=$lib/libcupti.so "$bin/cuda_matmul" --logdir "$work/matmul" \
            --steps 100 --graph 20 --nvtx --option gpu_enable_nvtx_tracking=true \
            --format perfetto,chrome
        step "2. cuda_matmul: whole-graph launches and the node mapping"
        "$bin/cuda_matmul" --logdir "$work/graph_trace" --steps 10 --graph 10 \
            --option gpu_enable_cupti_activity_graph_trace=true \
            --option gpu_dump_graph_node_mapping=true
        step "3. cuda_matmul: PM sampling of two metrics"
        "$bin/cuda_matmul" --logdir "$work/pm" --steps 200 --option gpu_pm_sample_counters=$pm \
            --option gpu_pm_sample_interval_us=200
        step "4. cuda_matmul: gpu_trace_all_api_calls=true (fails its check: calls that launch nothing)"
        "$bin/cuda_matmul" --logdir "$work/matmul_all" --steps 20 \
            --option gpu_trace_all_api_calls=true
        step "5. candle_cuda"
        # The summary's JSON: tests/interop/xprof_memory.py --summary-json compares
        # XProf's GPU_0 peak with it where xprof is.
        "$bin/candle_cuda" --logdir "$work/candle" --steps 10 --format perfetto,chrome \
            --summary-json "$work/candle.summary.json"
        step "6. overhead: prof beside CUPTI's floor"
        "$bin/cuda_matmul" --logdir "$work/overhead" --steps 2 \
            --overhead 10000,100000 --rounds 21
        step "7. benches: the launch callback, the scope hook, the tracking allocator, stop's CPU side"
        (cd "$work" && "$bin/bench-callback" --bench --warm-up-time 1 --measurement-time 3 \
            --noplot 2>&1 | grep -E 'time:|interleaved|^\| |^gpu_tracer')
        (cd "$work" && "$bin/bench-objects" --bench alloc --warm-up-time 1 --measurement-time 3 \
            --noplot 2>&1 | grep -E 'time:|interleaved|alloc')
        "$bin/bench-stop" --bench --launches 10000,100000
        step "8. the live view: prof-top --kernels watching cuda_matmul --serve"
        live_check "$bin/prof-top" "$out" "$bin/cuda_matmul" --serve 25
        step "9. the stack sampler's cost on this host (interleaved rounds)"
        echo "perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid)"
        (cd "$work" && "$bin/bench-sampling" --bench --warm-up-time 1 --measurement-time 2 \
            --noplot 2>&1 | grep -E 'interleaved|sampling-|warning|refused')
        step "done"
    } 2>&1 | tee "$out/gpu-checks.log"
    tar czf "$out/profiles.tar.gz" -C "$work" --exclude=bin .
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
    build) build "$@" ;;
    run) run "$@" ;;
    # live_check alone, against any server (tried without a GPU on serve_training):
    # gpu_checks.sh live PROF_TOP OUT SERVER...
    live) live_check "$@" ;;
    *) sed -n '2,36p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
