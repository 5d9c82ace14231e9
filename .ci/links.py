#!/usr/bin/env python3
"""Checks every relative link and image in README.md and docs/*.md: the file it names
exists, and the anchor it names (`page.md#heading`, `#heading`) is a heading of that
page, as GitHub makes anchors from headings. Links outside the repository (http, https,
mailto) are not fetched. Exits 1 naming each broken link.

    python3 .ci/links.py [ROOT]
    python3 .ci/links.py --self-test
"""

import pathlib
import re
import sys

LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(text):
    """The lines of a Markdown page outside fenced code blocks, numbered from 1."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped (letters, digits,
    spaces, hyphens and underscores kept), spaces as hyphens."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(page):
    found = set()
    counts = {}
    for _, line in prose_lines(page.read_text(encoding="utf-8")):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = counts.get(base, 0)
        counts[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def check(root):
    pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    broken = []
    checked = 0
    for page in pages:
        for number, line in prose_lines(page.read_text(encoding="utf-8")):
            # Inline code is not a link.
            line = re.sub(r"`[^`]*`", "", line)
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue
                checked += 1
                path, _, anchor = target.partition("#")
                dest = (page.parent / path).resolve() if path else page
                where = f"{page.relative_to(root)}:{number}: {target}"
                if not dest.exists():
                    broken.append(f"{where}: no such file {dest}")
                    continue
                if root.resolve() not in dest.parents and dest != root.resolve():
                    broken.append(f"{where}: outside the repository")
                    continue
                if anchor:
                    if dest.suffix != ".md":
                        broken.append(f"{where}: an anchor into a file that is not Markdown")
                    elif anchor not in anchors(dest):
                        broken.append(f"{where}: {dest.name} has no heading #{anchor}")
    return checked, broken


def self_test():
    """The checker fails on a missing file and a missing anchor, and passes the rest."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "docs").mkdir()
        (root / "README.md").write_text(
            "[ok](docs/a.md#a-b) [gone](docs/nothing.md) [bad](docs/a.md#nope)\n"
            "```sh\n[not a link](nowhere.md)\n```\n`[code](nowhere.md)` [web](https://x.y/z)\n"
        )
        (root / "docs" / "a.md").write_text("# A: `b`\n[up](../README.md) [self](#a-b)\n")
        checked, broken = check(root)
        assert checked == 5, checked
        assert len(broken) == 2 and "nothing.md" in broken[0] and "#nope" in broken[1], broken
    print("links: the checker finds a missing file and a missing anchor")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return 0
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    checked, broken = check(root)
    for b in broken:
        print(b, file=sys.stderr)
    if broken:
        print(f"links: {len(broken)} of {checked} relative links broken", file=sys.stderr)
        return 1
    print(f"links: all {checked} relative links in README.md and docs/ resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
