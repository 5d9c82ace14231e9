#!/usr/bin/env bash
# The GPU half of the checks, on a machine with an NVIDIA GPU and no Rust: the binaries
# are built elsewhere and carried.
#
#   examples/gpu_checks.sh build BIN      # here: cuda_matmul and candle_cuda (release)
#                                         # into BIN (candle_cuda through
#                                         # examples/build_candle_cuda.sh)
#   examples/gpu_checks.sh run BIN OUT    # there: everything below; OUT gets
#                                         # gpu-checks.log and profiles.tar.gz
#
# What `run` does, each step's output in the log:
# 1. cuda_matmul, 100 steps, with the default API filtering, written also as Perfetto
#    and Chrome JSON (the formats' checks and XProf then read these where they run);
# 2. the same with gpu_trace_all_api_calls=true: the API calls before filtering;
# 3. 20 steps with gpu_enable_nvtx_tracking=true and NVTX_INJECTION64_PATH naming
#    libcupti: cuBLAS' own NVTX ranges;
# 4. candle_cuda: a candle-nn transformer trained on the GPU, its kernels attributed,
#    its device memory (prof's GPU_0 peak beside the driver's cuMemGetInfo), its summary
#    in candle.summary.json (where xprof is, check the profile with
#    tests/interop/xprof_memory.py --expect-allocator GPU_0 --summary-json it);
# 5. cuda_matmul --overhead 10000,100000 --rounds 21, then the same loop under
#    torch.profiler (examples/cuda_overhead_torch.py, with the python that has torch:
#    $TORCH_PYTHON, default /opt/torch/.venv/bin/python).
# The CUDA libraries are looked for under $CUDA_LIB (default
# /usr/local/cuda/targets/x86_64-linux/lib).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

build() {
    local bin=${1:?usage: gpu_checks.sh build BIN}
    mkdir -p "$bin"
    (cd "$here/.." && cargo build --release --features cuda --example cuda_matmul) || exit 1
    cp "$here/../target/release/examples/cuda_matmul" "$bin/"
    cp "$("$here/build_candle_cuda.sh" | tail -1)" "$bin/" || exit 1
    ls -la "$bin"
}

run() {
    local bin=${1:?usage: gpu_checks.sh run BIN OUT} out=${2:?usage: gpu_checks.sh run BIN OUT}
    local lib=${CUDA_LIB:-/usr/local/cuda/targets/x86_64-linux/lib}
    local py=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}
    local work
    work=$(mktemp -d)
    mkdir -p "$out"
    export LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # Libraries the toolkit lacks (libcurand, which candle loads) from the NVIDIA wheels
    # beside torch, after the toolkit's own.
    local d
    for d in "$(dirname "$(dirname "$py")")"/lib/python3*/site-packages/nvidia/*/lib; do
        [ -d "$d" ] && LD_LIBRARY_PATH+=:$d
    done
    step() { printf '\n=== %s (%ss)\n' "$1" "$SECONDS"; }
    {
        step "machine"
        nvidia-smi -L
        nvidia-smi --query-gpu=driver_version --format=csv,noheader
        lscpu | grep -E 'Model name|^CPU\(s\)'
        ls "$lib" | grep -E '^lib(cupti|cublas|curand|nvrtc)\.so' | xargs
        echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
        step "1. cuda_matmul, default API filtering"
        "$bin/cuda_matmul" --logdir "$work/matmul" --steps 100 --format perfetto,chrome
        step "2. cuda_matmul, gpu_trace_all_api_calls=true (fails its check: calls that launch nothing)"
        "$bin/cuda_matmul" --logdir "$work/matmul_all" --steps 100 \
            --option gpu_trace_all_api_calls=true
        step "3. cuda_matmul, NVTX"
        NVTX_INJECTION64_PATH=$lib/libcupti.so "$bin/cuda_matmul" --logdir "$work/nvtx" \
            --steps 20 --option gpu_enable_nvtx_tracking=true
        step "4. candle_cuda"
        "$bin/candle_cuda" --logdir "$work/candle" --steps 10 --format perfetto,chrome \
            --summary-json "$work/candle.summary.json"
        step "5. overhead: prof"
        "$bin/cuda_matmul" --logdir "$work/overhead" --steps 2 \
            --overhead 10000,100000 --rounds 21
        step "5. overhead: torch.profiler"
        PYTHONUNBUFFERED=1 "$py" "$here/cuda_overhead_torch.py" --launches 10000,100000 \
            --rounds 21 --budget-s 150
        step "done"
    } 2>&1 | tee "$out/gpu-checks.log"
    tar czf "$out/profiles.tar.gz" -C "$work" .
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
    build) build "$@" ;;
    run) run "$@" ;;
    *) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
