"""A bar at zero is seen: every bar of the unlearning plot and the sweep plot carries its value."""

import matplotlib

matplotlib.use("Agg")
from matplotlib.figure import Figure

from stamen.unlearn.report import bar_plot


def test_a_zero_bar_carries_its_value(tmp_path, monkeypatch):
    drawn = []
    original = Figure.savefig
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: (drawn.append(self), original(self, *a, **k))[1])
    figures = {"acc_remaining": 0.9, "acc_forget": 0.0, "test_global": 0.8, "test_forgotten_class": 0.0,
               "test_other_classes": 0.85, "mia_auc": None}  # fmt: skip
    result = {"kind": "class", "request": "class:1", "dataset": "csbm", "num_clients": 3, "methods": ["wash"],
              "mean": {"wash": figures}, "std": {"wash": {}}}  # fmt: skip
    bar_plot(result, tmp_path / "u.png")
    (figure,) = drawn
    labels = [text.get_text() for text in figure.axes[0].texts]
    assert labels.count("0.00") == 2 and "0.90" in labels
    assert (tmp_path / "u.png").stat().st_size > 0


def test_a_sweep_bar_says_its_value_or_that_it_has_none():
    from stamen.cli.commands.sweep import bar_text

    assert [bar_text(0.0), bar_text(0.5), bar_text(None)] == ["0.000", "0.500", "no figure"]
