"""The README stays a landing page and its documentation holds together: README.md is at most 250
lines (issue 39: it had grown to ~990, and a newcomer could not find the quick start in it), and
every relative link of README.md and docs/*.md reaches a file that exists, and a heading of it
when the link names one. The pages moved out of the README link to each other and back, so a
renamed heading or page breaks a link a reader follows; this test names each broken one."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _prose(text: str) -> str:
    """The text outside fenced code blocks and inline code, where a link is a link."""
    return re.sub(r"`[^`\n]*`", "", FENCE.sub("", text))


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lowercased, punctuation dropped, spaces as hyphens, repeats -1, -2."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in re.findall(r"^#{1,6} +(.+?) *#*$", FENCE.sub("", page.read_text()), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _broken(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(_prose(page.read_text())):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target} (no heading #{anchor} in {path or page.name})")
    return broken


def test_the_readme_is_a_landing_page() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move a section into docs/ and link it"
    text = "\n".join(lines)
    for heading in ("## Quick start", "## How the grader decides", "## Documentation"):
        assert heading in lines, f"README.md lost its section {heading!r}"
    linked = {Path(target.partition("#")[0]).name for target in LINK.findall(_prose(text))}
    unlinked = [page.name for page in PAGES[1:] if page.name not in linked]
    assert not unlinked, f"docs pages the README does not link to: {unlinked}"


def test_every_relative_link_resolves() -> None:
    broken = {str(page.relative_to(ROOT)): found for page in PAGES if (found := _broken(page))}
    assert not broken, f"broken links: {broken}"


def test_the_link_check_catches_a_broken_link(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# Other\n\n## A `code` heading: yes\n")
    page.write_text(
        "# Page\n[ok](other.md#a-code-heading-yes) [self](#page) [web](https://example.com)\n"
        "[gone](missing.md) [bad anchor](other.md#nope)\n```\n[in code](nowhere.md)\n```\n"
    )
    assert _broken(page) == ["missing.md (no such file)", "other.md#nope (no heading #nope in other.md)"]


def test_the_architecture_page_names_places_that_exist() -> None:
    """docs/architecture.md's map of the code (the README's said where things used to be): every
    module and folder it names at the head of a line is where it says."""
    block = FENCE.search((ROOT / "docs" / "architecture.md").read_text())
    assert block, "docs/architecture.md has no code map"
    entry = r"[\w{},/]+/|\w+\.py"
    missing = []
    for line in block.group(0).splitlines()[1:-1]:
        found = re.match(rf"^( {{0,2}})((?:{entry})(?: (?:{entry}))*)(?:  |$)", line)
        if not found or found.group(1) == " ":
            continue
        base = ROOT / "harness" / "castbench" if found.group(1) else ROOT
        for name in found.group(2).split():
            head, _, rest = name.partition("{")
            options, _, tail = rest.partition("}")
            for choice in options.split(",") if rest else [""]:
                if not (base / f"{head}{choice}{tail}").exists():
                    missing.append(f"{head}{choice}{tail}")
    assert not missing, f"docs/architecture.md names places that do not exist: {missing}"
