#!/usr/bin/env bash
# Makes the README's screenshot: XProf's trace viewer on a prof profile, zoomed into a
# few steps, with the launch -> kernel flow arrows on.
#
#   docs/screenshot.sh PROFILE OUT.png
#   FIND=forward ZOOMS=1 docs/screenshot.sh PROFILE OUT.png   # framed on the first `forward`
#
# PROFILE is a .xplane.pb file or a logdir. XProf (`xprof --logdir`) binds every
# interface, so it runs inside a network namespace with only loopback up, and headless
# Chromium (Debian's `chromium`, driven by playwright-core) reaches it there.
# Needs: `apt-get install chromium`, the CI virtualenv's xprof (target/ci-venv, made by
# .ci/run or `python3 -m venv target/ci-venv && target/ci-venv/bin/pip install -r
# tests/interop/requirements.txt`), node and npm, and `unshare -n` (root).
#
# The screenshots in docs/images/ were made from cuda_matmul's profile on an H200
# (examples/gpu_checks.sh), and from burn_train's on wgpu over lavapipe (docs/burn.md),
# with:
#   docs/screenshot.sh gpu-out/profiles/matmul docs/images/xprof-trace-viewer.png
#   FIND=forward ZOOMS=0 docs/screenshot.sh burn-wgpu-logs docs/images/xprof-burn-wgpu.png
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
profile=${1:?usage: docs/screenshot.sh PROFILE OUT.png}
out=${2:?usage: docs/screenshot.sh PROFILE OUT.png}
xprof=${XPROF:-$root/target/ci-venv/bin/xprof}
port=${PORT:-6111}

test -x "$xprof" || { echo "no xprof at $xprof (see the comment at the top)" >&2; exit 2; }
command -v chromium >/dev/null || { echo "no chromium: apt-get install chromium" >&2; exit 2; }
npm ci --prefix "$here/screenshot" --no-audit --no-fund --loglevel=error

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -f "$profile" ]; then
    run=2026_01_01_00_00_00
    mkdir -p "$work/logdir/plugins/profile/$run"
    cp "$profile" "$work/logdir/plugins/profile/$run/"
    logdir=$work/logdir
else
    logdir=$(cd "$profile" && pwd)
fi
xplane=$(find "$logdir" -name '*.xplane.pb' | sort | head -n 1)
test -n "$xplane" || { echo "no .xplane.pb under $profile" >&2; exit 1; }
run=$(basename "$(dirname "$xplane")")
host=$(basename "$xplane" .xplane.pb)
url="http://localhost:$port/data/plugin/profile/trace_viewer@?run=$run&tag=trace_viewer@&host=$host"
out_abs=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")

# Inside the namespace: loopback up, XProf in the background, Chromium against it.
unshare -n bash -c '
    set -euo pipefail
    ip link set lo up
    "$1" --logdir "$2" --port "$3" >"$4/xprof.log" 2>&1 &
    xprof_pid=$!
    trap "kill $xprof_pid 2>/dev/null || true" EXIT
    for _ in $(seq 1 100); do
        curl -sf "http://localhost:$3/" >/dev/null && break
        sleep 0.2
    done
    node "$5/screenshot/shot.mjs" "$6" "$7" "$8" "$9"
' _ "$xprof" "$logdir" "$port" "$work" "$here" "$url" "$out_abs" "${ZOOMS:-13}" "${FIND:-}"
