"""The README's tour: every ``$ stamen ...`` line parses with the real CLI (nothing runs), every link resolves."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from stamen.cli.main import build_parser

PROJECT = Path(__file__).resolve().parents[2]
README = PROJECT / "README.md"
PAGES = sorted((PROJECT / "docs").glob("*.md"))
TOUR_STEPS = ("run", "sweep", "compare", "certify", "unlearn", "deploy", "audit")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```console\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def tour_commands(text: str) -> list[list[str]]:
    """The argv (after ``stamen``) of each ``$ stamen`` line in the console blocks of the tour."""
    start = text.index("## A five-minute tour")
    end = text.index("\n## ", start + 1)
    commands = []
    for block in _FENCE.findall(text[start:end]):
        for line in block.splitlines():
            if line.startswith("$ "):
                argv = shlex.split(line[2:])
                assert argv[0] == "stamen", f"a tour command that is not stamen's: {line!r}"
                commands.append(argv[1:])
    return commands


def slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces as '-'."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```$", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
    return {slug(line.lstrip("#")) for line in text.splitlines() if re.match(r"#{1,6} ", line)}


def links(path: Path) -> list[str]:
    return [target for target in _LINK.findall(path.read_text()) if not target.startswith(("http://", "https://"))]


def test_every_tour_command_parses():
    commands = tour_commands(README.read_text())
    assert {argv[0] for argv in commands} >= set(TOUR_STEPS)
    for argv in commands:
        try:
            args = build_parser(argv[0]).parse_args(argv)
        except SystemExit as error:  # argparse's way of refusing a command line
            pytest.fail(f"README tour: `stamen {shlex.join(argv)}` does not parse (exit {error.code})")
        assert callable(args.func)


def test_a_broken_tour_command_is_caught():
    text = "## A five-minute tour\n\n```console\n$ stamen run --engine warp\n```\n\n## Next\n"
    (argv,) = tour_commands(text)
    with pytest.raises(SystemExit):
        build_parser(argv[0]).parse_args(argv)


def test_the_readme_links_every_docs_page_and_each_link_exists():
    targets = links(README)
    linked = {target.split("#")[0] for target in targets if target.startswith("docs/")}
    assert linked >= {f"docs/{page.name}" for page in PAGES}
    for target in targets:
        file, _, anchor = target.partition("#")
        path = (README.parent / file) if file else README
        assert path.exists(), f"README links to {target}, which does not exist"
        if anchor and path.suffix == ".md":
            assert anchor in anchors(path), f"README links to {target}: no such heading"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_link_of_a_docs_page_resolves(page):
    for target in links(page):
        file, _, anchor = target.partition("#")
        path = (page.parent / file).resolve() if file else page
        assert path.exists(), f"{page.name} links to {target}, which does not exist"
        if anchor and path.suffix == ".md":
            assert anchor in anchors(path), f"{page.name} links to {target}: no such heading"
