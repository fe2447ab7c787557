"""The generic journal of a long job's units (:mod:`stamen.experiments.journal`), on its own: no bench runs."""

import json

import numpy as np
import pytest

from stamen.experiments.journal import JournalRefused, UnitJournal
from stamen.server.runlock import FolderLocked

SETTINGS = {"seeds": "0,1", "rounds": 2}


def opened(output, settings=SETTINGS):
    return UnitJournal.open(output, "stamen bench toy", settings, "benchmark", "or give another --out")


def test_units_come_back_as_plain_json_and_nothing_is_written_before_the_first(tmp_path):
    journal = opened(tmp_path / "toy")
    assert not (tmp_path / "toy.partial.jsonl").exists()  # opened, locked, but no unit yet
    assert journal.add("a", {"acc": np.float64(0.5), "steps": np.int64(3), "pair": (1, 2)}) == {
        "acc": 0.5,
        "steps": 3,
        "pair": [1, 2],
    }
    journal.close()
    header, unit = (json.loads(line) for line in (tmp_path / "toy.partial.jsonl").read_text().splitlines())
    assert header["journal"] == "stamen bench toy" and header["settings"] == SETTINGS and len(header["digest"]) == 64
    again = opened(tmp_path / "toy")
    assert again.units == {"a": {"acc": 0.5, "steps": 3, "pair": [1, 2]}} and again.read_back == 1
    again.remove()
    assert not (tmp_path / "toy.partial.jsonl").exists()


def test_one_writer_at_a_time(tmp_path):
    first = opened(tmp_path / "toy")
    with pytest.raises(FolderLocked, match="is being written by"):
        opened(tmp_path / "toy")
    first.close()
    opened(tmp_path / "toy").close()  # released: the next one takes it


def test_a_torn_first_line_is_dropped_and_a_file_of_another_job_refused(tmp_path):
    path = tmp_path / "toy.partial.jsonl"
    path.write_bytes(b'{"journal": "stamen be')
    journal = opened(tmp_path / "toy")
    assert "dropped a torn first line" in journal.notes[0] and not path.exists() and journal.units == {}
    journal.close()
    path.write_text('{"journal": "stamen audit privacy", "version": 1}\n')
    with pytest.raises(JournalRefused, match="is not a journal of stamen bench toy"):
        opened(tmp_path / "toy")
    other = opened(tmp_path / "other")
    other.add("x", 1)
    other.close()
    with pytest.raises(JournalRefused, match=r"differ in: rounds"):
        UnitJournal.open(tmp_path / "other", "stamen bench toy", {**SETTINGS, "rounds": 3}, "benchmark", "")
