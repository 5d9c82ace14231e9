#!/usr/bin/env python3
"""Every publishable package of the workspace has a name that is free on crates.io or ours.

`cargo info NAME` asks the registry (it folds `-` and `_` together, as crates.io does).
A name it cannot find is free; a name it finds must give this workspace's repository.
Run outside the workspace, or `cargo info` would describe the local package.

    cargo metadata --no-deps --format-version 1 --locked | python3 .ci/names.py
    python3 .ci/names.py --self-test     # a taken name fails, a free one passes
"""
import json
import re
import subprocess
import sys
import tempfile


def registry_owner(name: str, cwd: str) -> tuple[bool, str | None]:
    """(found, repository) of NAME on crates.io."""
    out = subprocess.run(["cargo", "info", name], cwd=cwd, capture_output=True, text=True,
                         timeout=300)
    text = out.stdout + out.stderr
    if out.returncode != 0:
        if "could not find" in text:
            return False, None
        raise SystemExit(f"names: `cargo info {name}` failed without an answer:\n{text}")
    m = re.search(r"^repository:\s*(\S+)", out.stdout, re.M)
    return True, m.group(1) if m else None


def check(names: list[str], ours: str) -> list[str]:
    problems = []
    with tempfile.TemporaryDirectory() as cwd:
        for name in names:
            found, repo = registry_owner(name, cwd)
            if not found:
                print(f"  {name}: free on crates.io")
            elif repo and repo.rstrip("/").removesuffix(".git") == ours:
                print(f"  {name}: ours on crates.io ({repo})")
            else:
                problems.append(f"{name}: taken on crates.io by {repo or 'a crate with no repository'}; "
                                f"rename the package (keep [lib] name if the code's paths must stay)")
    return problems


def main() -> int:
    if sys.argv[1:] == ["--self-test"]:
        ours = "https://github.com/prof-rs/prof"
        taken = check(["prof", "profiler-macros"], ours)
        assert len(taken) == 2, taken
        assert check(["prof-names-self-test-free-9f3c"], ours) == [], "a free name was refused"
        print("names: self-test passed (a taken name fails, a free one passes)")
        return 0
    meta = json.load(sys.stdin)
    packages = [p for p in meta["packages"] if p.get("publish") != []]
    repos = {p.get("repository") for p in packages}
    if len(repos) != 1 or None in repos:
        print(f"names: the publishable packages do not share one repository: {repos}", file=sys.stderr)
        return 1
    ours = repos.pop().rstrip("/")
    problems = check(sorted(p["name"] for p in packages), ours)
    for p in problems:
        print(f"names: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
