#!/usr/bin/env bash
# Builds examples/candle_cuda/ (feature `candle-cuda`) for NVIDIA H100/H200 GPUs
# (compute capability 9.0) and CUDA 13.0 drivers (580 and later), on a machine with no
# CUDA toolkit and no GPU. Prints the binary's path; carry that one file to the GPU
# machine and run it there (it loads libcuda, libcublas, libcurand and libcupti at run
# time: put <cuda>/targets/x86_64-linux/lib on LD_LIBRARY_PATH if they are not on the
# loader's path).
#
#   examples/build_candle_cuda.sh            # release build; a first build takes long
#
# What it does, and why:
# 1. nvcc 13.0 from PyPI, in a virtualenv under the target directory: the
#    nvidia-cuda-nvcc wheel with the wheels it needs pinned to the same series
#    (nvvm: cicc; crt: nvcc's own headers; runtime: cuda_runtime.h, cuda_fp16.h,
#    cuda_bf16.h, cuda.h; cccl: cub, thrust and cuda/std, which candle-kernels
#    includes). They all unpack into one site-packages/nvidia/cu13 that is laid out
#    like a toolkit (bin, include, lib, nvvm). PTX from a newer nvcc (a newer PTX ISA)
#    would not load on a CUDA 13.0 driver, hence 13.0.* for every wheel.
# 2. candle 0.11.1's `cuda` feature asks cudarc for `dynamic-linking`: the binary would
#    need every CUDA library at load time (libcurand included), and prof's tracer, which
#    needs cudarc's `dynamic-loading` API, does not compile against it. candle-kernels
#    also links libcudart dynamically. This script builds against copies of the two
#    crates with just that changed (cudarc `dynamic-loading`; cudart linked statically
#    from the runtime wheel), patched in for this build only; the repository's
#    Cargo.lock is left as it was.
# 3. CUDA_COMPUTE_CAP=90: candle-kernels' PTX and static kernels for sm_90a. cudarc takes
#    the CUDA version (13.0) from `nvcc --version`; the script checks that it did.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$target"
target=$(cd "$target" && pwd)
venv=$target/nvcc-venv
cuda_series=13.0
compute_cap=${CUDA_COMPUTE_CAP:-90}

say() { printf '\n=== %s (%ss)\n' "$1" "$SECONDS"; }

say "nvcc $cuda_series from PyPI into $venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "nvidia-cuda-nvcc==$cuda_series.*" "nvidia-nvvm==$cuda_series.*" \
    "nvidia-cuda-crt==$cuda_series.*" "nvidia-cuda-runtime==$cuda_series.*" \
    "nvidia-cuda-cccl==$cuda_series.*"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cuda_home=$site/nvidia/cu13
for need in bin/nvcc nvvm/bin/cicc include/cuda_runtime.h include/cuda_fp16.h \
        include/cuda_bf16.h include/crt/host_config.h include/cccl/cub/cub.cuh \
        lib/libcudart_static.a; do
    test -e "$cuda_home/$need" || { echo "the wheels lack $need under $cuda_home" >&2; exit 1; }
done
export PATH=$cuda_home/bin:$PATH
export CUDA_HOME=$cuda_home CUDA_PATH=$cuda_home CUDA_ROOT=$cuda_home
export CUDA_COMPUTE_CAP=$compute_cap
# candle-kernels compiles its .cu files through cudaforge, one nvcc at a time unless told.
export CUDAFORGE_THREADS=${CUDAFORGE_THREADS:-$(nproc)}
release=$(nvcc --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')
test "$release" = "$cuda_series" || { echo "nvcc is release $release, not $cuda_series" >&2; exit 1; }
echo "nvcc $release at $cuda_home/bin/nvcc; CUDA_COMPUTE_CAP=$CUDA_COMPUTE_CAP"

say "candle-core and candle-kernels, patched for run-time loading"
patched=$target/candle-cuda-patch
# The registry sources cargo resolved for this feature (the versions in Cargo.lock).
cargo metadata --locked --format-version 1 --features candle-cuda >"$target/candle-cuda-metadata.json"
python3 - "$target/candle-cuda-metadata.json" "$patched" <<'EOF'
import json, pathlib, shutil, sys

meta = json.load(open(sys.argv[1]))
out = pathlib.Path(sys.argv[2])
dirs = {}
for p in meta["packages"]:
    if p["name"] in ("candle-core", "candle-kernels") and p["source"]:
        dirs[p["name"]] = pathlib.Path(p["manifest_path"]).parent
missing = {"candle-core", "candle-kernels"} - dirs.keys()
if missing:
    sys.exit(f"cargo metadata has no {missing}")

def patch(name, file, old, new):
    src = dirs[name]
    dst = out / name
    text = (src / file).read_text()
    if text.count(old) != 1:
        sys.exit(f"{name} {src.name}: expected {old!r} once in {file}; the patch needs updating")
    patched = text.replace(old, new)
    marker = dst / ".patched-from"
    if marker.exists() and marker.read_text() == str(src) and (dst / file).read_text() == patched:
        print(f"{src.name}: {dst} is up to date")
        return  # untouched, so cargo rebuilds nothing
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    (dst / file).write_text(patched)
    marker.write_text(str(src))
    print(f"{src.name} -> {dst} ({file} patched)")

# cudarc through candle-core: loaded at run time, like prof's own cudarc.
patch("candle-core", "Cargo.toml", '"dynamic-linking",', '"dynamic-loading",')
# candle-kernels' static MoE/GGUF kernels: the CUDA runtime linked in statically (it
# loads libcuda itself when first used), so the binary needs no libcudart.so.
patch(
    "candle-kernels",
    "build.rs",
    'println!("cargo:rustc-link-lib=dylib=cudart");',
    'println!("cargo:rustc-link-search=native={}/lib", std::env::var("CUDA_HOME").expect("CUDA_HOME"));\n'
    '    println!("cargo:rustc-link-lib=static=cudart_static");\n'
    '    println!("cargo:rerun-if-env-changed=CUDA_HOME");',
)
EOF

say "cargo build --release --example candle_cuda --features candle-cuda"
# The patch rewrites Cargo.lock for this build; put the repository's back afterwards.
cp Cargo.lock "$target/Cargo.lock.before-candle-cuda"
trap 'cp "$target/Cargo.lock.before-candle-cuda" "$root/Cargo.lock"' EXIT
messages=$target/candle-cuda-build.jsonl
cargo build --release --example candle_cuda --features candle-cuda \
    --config "patch.crates-io.candle-core.path=\"$patched/candle-core\"" \
    --config "patch.crates-io.candle-kernels.path=\"$patched/candle-kernels\"" \
    --message-format json-render-diagnostics >"$messages"

say "checks"
bin=$target/release/examples/candle_cuda
# The CUDA version cudarc's build script chose: the API it binds and the library names
# it loads (libcublas.so.13, ...).
version=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "build-script-executed" and "/cudarc-" in m["package_id"] + m.get("out_dir", ""):
        print(" ".join(c for c in m["cfgs"] if c.startswith("feature=\"cuda-")))
' "$messages" | sort -u)
echo "cudarc: $version"
test "$version" = "feature=\"cuda-${cuda_series/./0}0\"" \
    || { echo "cudarc did not bind CUDA $cuda_series alone: $version" >&2; exit 1; }
needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "needs at load time: $needed"
if grep -qE 'libcuda|libcublas|libcurand|libnvrtc|libcupti|libcudart' <<<"$needed"; then
    echo "the binary links a CUDA library; it must load them at run time" >&2
    exit 1
fi
# cudaforge turns 90 into sm_90a (Hopper's arch-specific variant; it loads on compute
# capability 9.0 exactly: H100, H200) and 80 into sm_80.
ptx_targets=$(strings -n 8 "$bin" | sed -n 's/^\.target \(sm_[0-9a-z]*\).*/\1/p')
echo "PTX modules by target: $(sort <<<"$ptx_targets" | uniq -c | xargs)"
test -n "$ptx_targets" && ! grep -qvE "^sm_${compute_cap}a?$" <<<"$ptx_targets" \
    || { echo "expected PTX for sm_$compute_cap only" >&2; exit 1; }
echo "size: $(du -h "$bin" | cut -f1)"
echo "$bin"
