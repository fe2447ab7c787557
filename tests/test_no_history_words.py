"""The tracked text speaks of the software: no development-history talk (numbered issues, work sessions, the
brief a change was made for), no folder of one machine, and the docs' count of FL algorithms is the registry's.

Data records (``.json``, ``.jsonl``, ``.csv``: a bench's or a tuner's measured output, paths included) are
left as written. A software sense of a flagged word is allowed by a narrow pattern of its own (:data:`ALLOWED`).
"""

import re
import subprocess
from pathlib import Path

import pytest

from stamen.contract.algorithms import ALGORITHMS

ROOT = Path(__file__).resolve().parent.parent
ORDINALS = "first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth"
HISTORY = re.compile(
    "|".join(
        (
            r"\bissues?\s+\d+",  # a numbered issue of the tracker ("issue #1386" of another project is a reference)
            rf"\b(?:{ORDINALS}|this|that|earlier|later|previous|next|last|same|one|two)\s+sessions?\b",
            r"\bsessions?'s?\b(?! of (?:its|their) own)",
            r"\b(?:during|within|in)\s+the\s+session\b",
            r"\bthis\s+stop\b",
            r"\bthe\s+brief\b|\bbrief's\b",
            r"(?<![\w.])/(?:work|root)/",
            r"(?<![\w.])/home/[a-z_][\w-]*/",
            r"/tmp/pytest",
        )
    ),
    re.IGNORECASE,
)
# Software senses: a process session (setsid), pytest's session scope.
ALLOWED = re.compile(r"scope=\"session\"")
SELF = "tests/test_no_history_words.py"  # spells the patterns and planted examples
DATA = (".json", ".jsonl", ".csv", ".svg", ".png", ".pdf", ".npz", ".pt", ".gz", ".zip")


def history_words(text: str) -> list[str]:
    """The history talk in ``text``: ``LINE: MATCH`` for every flagged phrase (a line break may split it) not in an
    allowed one."""
    allowed = [match.span() for match in ALLOWED.finditer(text)]
    return [
        f"{text.count(chr(10), 0, match.start()) + 1}: {' '.join(match.group(0).split())}"
        for match in HISTORY.finditer(text)
        if not any(start <= match.start() < end for start, end in allowed)
    ]


@pytest.mark.parametrize(
    "planted",
    [
        "as asked in issue 35 item 2",
        "## Second session (2026-12-02): faster",
        "this stop's levers",
        "(benchmarks/deploy-nodes.md, seventh\nsession)",
        "the brief's precondition",
        "measured on this session's machine",
        "--data-root /work/shared/datasets",
        "cache in /root/.cache and /home/alice/data",
        "left in /tmp/pytest-of-x/",
    ],
)
def test_the_scanner_finds_planted_history_talk(planted):
    assert history_words(f"Stamen trains.\n{planted}\n") != []


@pytest.mark.parametrize(
    "software",
    [
        "Flower starts SuperExec in a session of its own",
        "the reaper and the command in sessions of their own (setsid)",
        '@pytest.fixture(scope="session")',
        "pytest-xdist issue #1386",
        "the push session may have expired",
        "../shared/datasets and ~/data",
    ],
)
def test_the_scanner_lets_software_terms_be(software):
    assert history_words(software) == []


def _tracked_text() -> dict[str, str]:
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    texts = {}
    for name in names:
        path = ROOT / name
        if name.endswith(DATA) or name == SELF or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue  # a binary file
        texts[name] = data.decode("utf-8", errors="replace")
    return texts


def test_no_tracked_file_talks_of_how_it_was_made():
    found = [f"{name}:{hit}" for name, text in _tracked_text().items() for hit in history_words(text)]
    assert found == []


def test_the_docs_count_of_fl_algorithms_is_the_registrys():
    texts = _tracked_text()
    counts = [
        (name, int(match.group(1)))
        for name, text in texts.items()
        if name == "README.md" or name.startswith("docs/")
        for match in re.finditer(r"\b(\d+) FL algorithms\b", text)
    ]
    assert counts, "README.md says how many FL algorithms Stamen has"
    assert [c for c in counts if c[1] != len(ALGORITHMS)] == []
