#!/usr/bin/env bash
# Cold build time and crate count of a minimal user crate, for the README's build-cost
# table: prof with its default features, prof with only `tracing`, and tracing-subscriber + tracing-chrome as the baseline a Rust user
# knows, and prof with OTLP (its default until this table). Each builds in a fresh target directory (the registry cache is warm; nothing
# else is shared), debug profile, CARGO_BUILD_JOBS as set (CI's machine: 2 cores).
#
# usage: benches/build_cost.sh [OUT.md]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=${1:-/dev/stdout}

variant() { # name, dependency lines
    local dir=$work/$1
    mkdir -p "$dir/src"
    echo 'fn main() {}' > "$dir/src/main.rs"
    printf '[package]\nname = "user-%s"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n%s\n\n[workspace]\n' \
        "$1" "$2" > "$dir/Cargo.toml"
    cp "$root/Cargo.lock" "$dir/Cargo.lock"
}
variant default "prof-ml = { path = \"$root\" }"
variant tracing "prof-ml = { path = \"$root\", default-features = false, features = [\"tracing\"] }"
variant otlp "prof-ml = { path = \"$root\", features = [\"otlp\"] }"
variant tracing-chrome 'tracing = "0.1"
tracing-subscriber = "0.3"
tracing-chrome = "0.7"'

{
    echo "| user crate depends on | crates compiled | cold build (s) |"
    echo "|---|---:|---:|"
    for v in tracing-chrome tracing default otlp; do
        dir=$work/$v
        (cd "$dir" && cargo fetch -q 2>/dev/null || true)
        crates=$(cd "$dir" && cargo tree -e normal,build --prefix none 2>/dev/null | sed 's/ (\*)//' | sort -u | wc -l)
        start=$(date +%s.%N)
        (cd "$dir" && cargo build -q 2>&1) >&2
        end=$(date +%s.%N)
        case $v in
            default) label='`prof-ml` (default: tracing, remote)' ;;
            tracing) label='`prof-ml`, `default-features = false, features = ["tracing"]`' ;;
            otlp) label='`prof-ml`, `features = ["otlp"]` (the old default)' ;;
            *) label='`tracing-subscriber` + `tracing-chrome`' ;;
        esac
        printf '| %s | %d | %.0f |\n' "$label" "$((crates - 1))" "$(echo "$end - $start" | bc)"
    done
} > "$out"
