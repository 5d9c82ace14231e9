#!/usr/bin/env python3
"""The declared rust-version is honest about dependencies: no crate the workspace's
libraries and binaries build with (normal and build dependencies, all features, as
locked) declares a newer one. clippy's incompatible_msrv lint (on under -D warnings)
checks prof's own use of std against the same version. No older toolchain can be
installed here, so nothing compiles with the declared version itself.

usage: cargo metadata --format-version 1 --locked --all-features | .ci/msrv.py
"""
import json
import sys


def version(text):
    parts = [int(part) for part in text.split(".")]
    return tuple(parts + [0] * (3 - len(parts)))


meta = json.load(sys.stdin)
packages = {p["id"]: p for p in meta["packages"]}
members = meta["workspace_members"]
declared = {version(packages[m]["rust_version"]) for m in members}
if len(declared) != 1:
    sys.exit(f"msrv: workspace members declare different rust-versions: {sorted(declared)}")
(msrv,) = declared

nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
seen, todo = set(), list(members)
while todo:
    node = todo.pop()
    if node in seen:
        continue
    seen.add(node)
    for dep in nodes[node]["deps"]:
        kinds = {k["kind"] for k in dep["dep_kinds"]}
        if kinds & {None, "build"}:
            todo.append(dep["pkg"])

too_new = sorted(
    (version(packages[p]["rust_version"]), packages[p]["name"], packages[p]["version"])
    for p in seen
    if p not in members and packages[p].get("rust_version")
    and version(packages[p]["rust_version"]) > msrv
)
if too_new:
    for v, name, ver in too_new:
        print(f"msrv: {name} {ver} needs Rust {'.'.join(map(str, v))}", file=sys.stderr)
    sys.exit(f"msrv: rust-version {'.'.join(map(str, msrv))} is lower than a dependency needs")
newest = max(
    (version(packages[p]["rust_version"]), packages[p]["name"])
    for p in seen
    if packages[p].get("rust_version")
)
print(
    f"msrv: {len(seen)} crates build with Rust {'.'.join(map(str, msrv))}; "
    f"the newest requirement is {newest[1]}'s {'.'.join(map(str, newest[0]))}"
)
