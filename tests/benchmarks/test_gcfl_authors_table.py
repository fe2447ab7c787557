"""The pure parts of the GCFL side-by-side driver (benchmarks/tools/gcfl_authors_table.py): pooled accuracy, the
best and final rounds, the table. Expected values are worked out by hand from the inputs."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "tools"))

from gcfl_authors_table import best_and_final, markdown_table, mean_std, pooled, splits_text


def test_pooled_accuracy_weighs_clients_by_their_graphs():
    assert pooled([(2, 3), (1, 1)]) == 0.75  # 3 right of 4 graphs, not the mean of 2/3 and 1


def test_best_round_is_the_first_of_the_largest_selector_and_final_the_last():
    rounds = [
        {"round": 1, "val": 0.5, "test": 0.1},
        {"round": 2, "val": 0.7, "test": 0.2},
        {"round": 3, "val": 0.7, "test": 0.3},
        {"round": 4, "val": 0.6, "test": 0.4},
    ]
    assert best_and_final(rounds, "val", ("test",)) == {"best_round": 2, "best": {"test": 0.2}, "final": {"test": 0.4}}


def test_splits_text_counts_the_splits_and_names_their_rounds():
    assert splits_text([{"round": 25}, {"round": 40}]) == "2 (25, 40)"
    assert splits_text([]) == "0"


def test_mean_std_is_in_percent_with_the_sample_deviation():
    assert mean_std([0.5, 0.7]) == "60.0 ± 14.1"  # std of 50 and 70: sqrt(200) = 14.14
    assert mean_std([0.5]) == "50.0"


def _side(best, final, rounds):
    return {
        "clients": {"best": best, "final": final},
        "clusters": {"best": best, "final": final},
        "splits": [{"round": r} for r in rounds],
        "reported": final,
        "wall_seconds": 1.0,
    }


def test_the_table_has_a_row_per_seed_and_the_mean_over_seeds():
    record = {
        "dataset": "MUTAG",
        "command": "python gcfl_authors.py",
        "provenance": {"commit": "abc", "date": "d", "platform": "p", "packages": {"torch": "t"}},
        "authors_code": {"digest": "x"},
        "settings_text": "s",
        "seeds": {
            "1": {"authors": _side(0.5, 0.75, [30]), "stamen": _side(0.6, 0.7, [])},
            "0": {"authors": _side(0.7, 0.65, [25, 40, 41]), "stamen": _side(0.8, None, [22])},
        },
    }
    lines = markdown_table(record).splitlines()
    rows = [line for line in lines if line.startswith(("| 0 ", "| 1 ", "| mean"))]
    assert rows[:3] == [
        "| 0 | 70.0 / 65.0 | 3 (25, 40, 41) | 80.0 / - | 1 (22) |",
        "| 1 | 50.0 / 75.0 | 1 (30) | 60.0 / 70.0 | 0 |",
        "| mean ± std | 60.0 ± 14.1 / 70.0 ± 7.1 | 2.0 ± 1.4 | 70.0 ± 14.1 / - | 0.5 ± 0.7 |",
    ]
