"""A bar at zero is seen: every bar of the unlearning plot and every point of the sweep plot carries its value."""

from stamen.common.pictures import figure_bytes
from stamen.unlearn.report import unlearning_figure


def test_a_zero_bar_carries_its_value():
    figures = {"acc_remaining": 0.9, "acc_forget": 0.0, "test_global": 0.8, "test_forgotten_class": 0.0,
               "test_other_classes": 0.85, "mia_auc": None}  # fmt: skip
    result = {"kind": "class", "request": "class:1", "dataset": "csbm", "num_clients": 3, "methods": ["wash"],
              "mean": {"wash": figures}, "std": {"wash": {}}}  # fmt: skip
    figure = unlearning_figure(result)
    labels = [text.get_text() for text in figure.axes[0].texts]
    assert labels.count("0.00") == 2 and "0.90" in labels
    ticks = [t.get_text() for t in figure.axes[0].get_xticklabels()]
    assert ticks == ["Dr acc", "Df acc", "test acc", "forgot-class test", "other-class test", "MIA AUC"]
    assert "class:1" in figure.axes[0].get_title() and figure_bytes(figure, "png").startswith(b"\x89PNG")


def test_a_sweep_point_says_its_value_or_that_it_has_none():
    from stamen.cli.commands.sweep import bar_text

    assert [bar_text(0.0), bar_text(0.5), bar_text(None)] == ["0.000", "0.500", "no figure"]
