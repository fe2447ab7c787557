"""The tracked text is portable and agrees with the registries: no folder of one machine in it, and the docs'
count of FL algorithms is the registry's.

Data records (``.json``, ``.jsonl``, ``.csv``: a bench's or a tuner's measured output) are left as written.
"""

import re
import subprocess
from pathlib import Path

import pytest

from stamen.contract.algorithms import ALGORITHMS

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


def test_the_docs_count_of_fl_algorithms_is_the_registrys():
    counts = [
        (name, int(match.group(1)))
        for name, text in _tracked_text().items()
        if name == "README.md" or name.startswith("docs/")
        for match in re.finditer(r"\b(\d+) FL algorithms\b", text)
    ]
    assert counts, "README.md says how many FL algorithms Stamen has"
    assert [c for c in counts if c[1] != len(ALGORITHMS)] == []
