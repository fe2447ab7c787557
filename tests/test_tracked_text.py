"""The tracked text is portable, speaks of the software only and agrees with the registries: no folder of one
machine in it, no word of the vocabulary in ``history_words.json`` (words that tell how the software was made,
not what it does), and every count of algorithms, models, tasks, datasets or partitioners that the docs write
is the registry's.

Data records (``.json``, ``.jsonl``, ``.csv``: a bench's or a tuner's measured output, and the vocabulary) are
left as written.
"""

import json
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
SELF = "tests/test_tracked_text.py"  # spells the machine-folder pattern and its planted examples
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


VOCABULARY = json.loads((Path(__file__).with_name("history_words.json")).read_text(encoding="utf-8"))
HISTORY_WORDS = {name: re.compile(pattern, re.IGNORECASE) for name, pattern in VOCABULARY["patterns"].items()}
# (file, pattern, a phrase on the matched line): why that use speaks of the software. Each entry must still match.
ALLOWED = {(name, pattern, phrase): why for name, pattern, phrase, why in VOCABULARY["allowed"]}
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


PLANTED = VOCABULARY["planted"]
LEGITIMATE = VOCABULARY["legitimate"]


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
