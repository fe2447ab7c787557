"""The tracked text is portable, speaks of the software only and agrees with the registries: no folder of one
machine in it, no word telling how the software was made (its work sessions, issues, briefs, what an earlier
state of the code did), and every count of algorithms, models, tasks, datasets or partitioners that the docs
write is the registry's.

Data records (``.json``, ``.jsonl``, ``.csv``: a bench's or a tuner's measured output) are left as written.
"""

import re
import subprocess
from pathlib import Path

import pytest

from stamen.contract.algorithms import ALGORITHMS
from stamen.contract.tasks import TASKS
from stamen.graphs.names import DATASET_SPECS, PARTITIONER_SPECS
from stamen.models.names import MODEL_SPECS

ROOT = Path(__file__).resolve().parent.parent
MACHINE_FOLDERS = re.compile(r"(?<![\w.])/(?:work|root)/|(?<![\w.])/home/[a-z_][\w-]*/|/tmp/pytest")
SELF = "tests/test_tracked_text.py"  # spells the pattern and its planted examples
DATA = (".json", ".jsonl", ".csv", ".svg", ".png", ".pdf", ".npz", ".pt", ".gz", ".zip")


def machine_folders(text: str) -> list[str]:
    """``LINE: MATCH`` for every folder of one machine in ``text``."""
    return [f"{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for m in MACHINE_FOLDERS.finditer(text)]


@pytest.mark.parametrize(
    "planted", ["--data-root /work/shared/datasets", "cache in /root/.cache", "/home/alice/data", "/tmp/pytest-of-x/"]
)
def test_the_scanner_finds_a_machines_folder(planted):
    assert machine_folders(f"Stamen trains.\n{planted}\n") != []


@pytest.mark.parametrize("portable", ["../shared/datasets and ~/data", "./benchout/runs", "$STAMEN_CACHE/flower/"])
def test_the_scanner_lets_portable_paths_be(portable):
    assert machine_folders(portable) == []


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


def test_no_tracked_file_names_a_folder_of_one_machine():
    found = [f"{name}:{hit}" for name, text in _tracked_text().items() for hit in machine_folders(text)]
    assert found == []


ORDINAL = r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth)"
# What tells the history of the software's making rather than what the software does. A pattern says its
# legitimate neighbours in its look-arounds (a process's session, a record of an earlier version, a run
# directory changed by hand); what is still legitimate after that is listed in ALLOWED, one file and phrase at a time.
HISTORY = {
    "an issue number": r"\bissues? #?\d+",
    "this issue": r"\b(?:this|that|an earlier|a later|the next|the last) issue\b",
    "a session": (
        r"(?<!\bnew )(?<!\bper-)(?<!process's )(?<!\bHTTP )(?<!\bgRPC )(?<!\bMLflow )(?<!\bRay )(?<![\"'])"
        r"\bsessions?\b(?!\s+of\s+(?:its|their)\s+own)(?![\"'])"
    ),
    "a stop of the work": rf"\b(?:this|that|the (?:last|next|previous)|an earlier|a later|{ORDINAL}) stop(?:'s|s)?\b",
    "the brief": r"\b(?:the|this|my|our|each) briefs?\b",
    "a helper": r"\bhelpers?\b",
    "before the fix": (
        r"\b(?:before|after|since|until) (?:the|this|that|my|our) "
        r"(?:fix|change|rewrite|refactor(?:ing)?|patch|commit)\b"
    ),
    "used to": r"(?<!\bis )(?<!\bare )(?<!\bbe )(?<!\bbeen )(?<!\bwas )(?<!\bwere )(?<!\bnever )(?<!\bnot )\bused to\b",
    "no longer": r"\bno longer\b",
    "an earlier version": r"(?<!\bof\s)(?<!\bof\san\s)(?<!\bby\san\s)\b(?:earlier|older|previous|former) versions?\b",
    "earlier code": r"\b(?:earlier|older|previous|former|old) (?:code|commits?)\b",
    "was changed": (
        r"\b(?:was|were|has been|have been|got) (?:changed|fixed|rewritten|reworked|refactored)\b"
        r"(?![\s\"'f]*(?:by hand|after|outside|on disk))"
    ),
    "now does": (
        r"\bnow (?:does|runs|takes|reads|writes|uses|asks|keeps|returns|imports|gives|reaches|the default)\b"
        r"|\b(?:is|are) now (?:imported|taken|computed|written|read|kept|built|cached|done)\b"
    ),
    "went from": r"\bwent from\b",
    "a default of its time": r"\bthen-(?:default|current)\b|\b(?:gave|got|took) \w+(?: and \w+)? new defaults?\b",
    "the project's past": r"\b(?:this|the) project (?:had|was|used|did)\b",
    "before the levers": r"\b(?:before|after) (?:the|these|this|those) (?:\w+ )?levers?\b",
    "this time": r"\bthis time\b",
    "a branch of the code": r"\bbranch(?:es)? [`'\"]|\b(?:on|this|that|another|my|our|git) branch\b",
    "the work's people": r"\b(?:lead engineer|worktree)s?\b",
}
HISTORY_WORDS = {name: re.compile(pattern, re.IGNORECASE) for name, pattern in HISTORY.items()}
# (file, pattern, a phrase on the matched line): why that use speaks of the software. Each entry must still match.
ALLOWED = {
    ("pyproject.toml", "an issue number", "xdist issue #1386"): "pytest-xdist's bug tracker, the reason for a pin",
    ("tests/conftest.py", "an issue number", "xdist issue #1386"): "pytest-xdist's bug tracker, the reason for a pin",
    ("tests/conftest.py", "an issue number", '"issue #1386: pytest 9.2'): "the refusal names pytest-xdist's bug",
    ("docs/runs.md", "no longer", "when the store no longer holds it"): "a tracking store's state during a run",
    ("stamen/server/tracking.py", "no longer", "store no longer holds it"): "a tracking store's state during a run",
    ("stamen/certify/exhaustive.py", "no longer", "no longer needed as parents"): "the search's state as it goes",
    ("stamen/simulations/deploy/ready_messages.py", "no longer", "no longer pending"): "a message's state at runtime",
    ("docs/upgrading-flower.md", "no longer", "function that no longer"): "what a later Flower may change",
    ("docs/upgrading-flower.md", "no longer", "no longer needs a task identity"): "what a later Flower may change",
}
SCOPE = ("README.md", "pyproject.toml", "docs/", "examples/", "stamen/", "tests/", ".ci/")


def in_scope(name: str) -> bool:
    """Whether the history words are looked for in tracked file ``name``."""
    return name.startswith(SCOPE) or (name.startswith("benchmarks/") and name.endswith(".md"))


def history_words(texts: dict[str, str]) -> tuple[list[str], set[tuple[str, str, str]]]:
    """``FILE:LINE: [PATTERN] MATCH`` for every history word in ``texts`` (by file name) that ALLOWED does not
    let be, and the ALLOWED entries that let one be."""
    found, used = [], set()
    for name, text in texts.items():
        lines = text.splitlines()
        for pattern, regex in HISTORY_WORDS.items():
            for match in regex.finditer(text):
                number = text.count("\n", 0, match.start()) + 1
                line = lines[number - 1]
                allowed = [key for key in ALLOWED if key[:2] == (name, pattern) and key[2] in line]
                used.update(allowed)
                if not allowed:
                    found.append(f"{name}:{number}: [{pattern}] {match.group(0)!r} in {line.strip()[:120]!r}")
    return found, used


PLANTED = [
    "Fixed in issue 42.",
    "See issue #7 for the numbers.",
    "This stop's levers cut the round to 9 s.",
    "The fourth session added link prediction.",
    "Measured in a later session.",
    "As the brief asks, the bench writes JSON.",
    "The bench helper writes JSON.",
    "Before the fix a round took 14 s.",
    "The loader used to copy every mask.",
    "The reader no longer copies the masks.",
    "An earlier version asked every 10 ms.",
    "The default was changed to 0.01.",
    "The bench now runs each engine twice.",
    "A round went from 32.9 to 14.3 s.",
    "FedAvgM with its then-default momentum diverged.",
    "The tuner gave FedAvgM and FedAdam new defaults.",
    "With the loop this project had before its engine.",
    "measured before the last levers",
    "Routes not taken this time.",
    "Measured on branch `ray`.",
    "Code of the worktree at a1daad8; the 100k rows were measured with earlier code.",
]
LEGITIMATE = [
    "Flower starts SuperExec in a session of its own; the reaper uses start_new_session=True.",
    "SuperExec runs in a new session.",
    '@pytest.fixture(scope="session")',
    "An HTTP session to MLflow; the MLflow run's id.",
    "a summary of an earlier version still reads; units kept by an earlier version resume",
    "the run directory was changed by hand: restore it",
    "FedLoG's head and tail branches; the feature branch stays local.",
    "the test accuracy at the best validation round, never used to select",
    "Ctrl-C stops every process it started; fedlog-warmup-stop='test-mask'",
]


@pytest.mark.parametrize("planted", PLANTED)
def test_the_scanner_finds_a_history_sentence_in_a_file(tmp_path, planted):
    (tmp_path / "docs").mkdir()
    planted_file = tmp_path / "docs" / "planted.md"
    planted_file.write_text(f"# Stamen\n\nStamen trains.\n{planted}\n")
    found, _ = history_words({"docs/planted.md": planted_file.read_text()})
    assert len(found) >= 1 and found[0].startswith("docs/planted.md:4: ["), found


@pytest.mark.parametrize("legitimate", LEGITIMATE)
def test_the_scanner_lets_the_softwares_own_words_be(legitimate):
    assert history_words({"docs/planted.md": legitimate}) == ([], set())


def test_an_allowed_use_is_allowed_in_its_file_only():
    line = "Stamen reads the run when the store no longer holds it."
    assert history_words({"docs/runs.md": line})[0] == []
    assert len(history_words({"docs/api.md": line})[0]) == 1


def test_the_history_words_cover_the_tracked_text_they_should():
    assert all(map(in_scope, ["README.md", "docs/a.md", "stamen/x.py", "tests/t.py", "benchmarks/b.md", ".ci/run"]))
    assert not any(map(in_scope, ["benchmarks/b.json", "hatch_build.py", ".gitignore"]))


def test_no_tracked_text_tells_how_the_software_was_made():
    texts = {name: text for name, text in _tracked_text().items() if in_scope(name)}
    found, used = history_words(texts)
    assert found == [], "rewrite each to say what the software does and why, or remove it"
    assert sorted(set(ALLOWED) - used) == [], "these ALLOWED entries let nothing be any more: remove them"


NUMBER = (
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen"
    " eighteen nineteen twenty"
).split()
REGISTRIES = {
    "algorithms": ALGORITHMS,
    "models": MODEL_SPECS,
    "tasks": TASKS,
    "datasets": DATASET_SPECS,
    "partitioners": PARTITIONER_SPECS,
}
COUNT = re.compile(
    rf"\b(\d+|{'|'.join(NUMBER)}(?:-\w+)?) (?:FL |federated |built-in |bundled |registered |GNN |graph )?"
    rf"({'|'.join(REGISTRIES)})\b",
    re.IGNORECASE,
)


def written_counts(text: str) -> list[tuple[int, str]]:
    """``(NUMBER, KIND)`` for every count of a registry's entries that ``text`` writes ("23 FL algorithms")."""
    words = {word: n for n, word in enumerate(NUMBER, 1)}
    tens = {"twenty": 20, "thirty": 30, "forty": 40}
    counts = []
    for match in COUNT.finditer(text):
        spelled = match.group(1).lower()
        if spelled.isdigit():
            number = int(spelled)
        else:
            head, _, unit = spelled.partition("-")
            number = tens.get(head, words.get(head, 0)) + words.get(unit, 0)
        counts.append((number, match.group(2).lower()))
    return counts


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        ("with 23 FL algorithms, exact certificates", [(23, "algorithms")]),
        ("the seven models and three tasks", [(7, "models"), (3, "tasks")]),
        ("twenty-three algorithms over 4 partitioners", [(23, "algorithms"), (4, "partitioners")]),
        ("10 clients, 100 rounds; two neighbouring datasets differ", []),
    ],
)
def test_the_scanner_reads_a_written_count(text, counts):
    assert written_counts(text) == counts


def test_every_count_the_docs_write_is_the_registrys():
    written = [
        (name, number, kind)
        for name, text in _tracked_text().items()
        if name == "README.md" or name.startswith("docs/")
        for number, kind in written_counts(text)
    ]
    assert [(name, number, kind) for name, number, kind in written if number != len(REGISTRIES[kind])] == []
