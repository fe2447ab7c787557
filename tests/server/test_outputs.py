"""The run's figure: its plotting library loads beside the rounds, and the curves come from the rows."""

import subprocess
import sys


def test_plotting_loads_in_the_background_and_the_curves_are_drawn(tmp_path):
    code = f"""
import sys
from pathlib import Path
from server import outputs
assert "matplotlib" not in sys.modules
outputs.load_plotting().join(timeout=120)
import matplotlib
assert "matplotlib.pyplot" in sys.modules and matplotlib.get_backend().lower() == "agg"
rows = [{{"round": r, "global_val_acc": r / 9, "global_test_acc": r / 9, "train_loss": 1 / (1 + r)}} for r in range(4)]
outputs.plot_curves(Path({str(tmp_path)!r}), rows, "test")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
