"""``stamen config``: every run-config key by section, one key in full, the reference's table; no PyTorch."""

import subprocess
import sys
from pathlib import Path

import pytest

from stamen.cli.commands.config import REFERENCE, TABLE_MARK, markdown_table, update_table
from stamen.cli.main import main
from stamen.contract.algorithms import ALGORITHMS, plugin_keys
from stamen.contract.run_config import KEYS, SECTIONS

PROJECT = Path(__file__).resolve().parents[2]


def test_lists_every_key_by_section_with_default_and_help(capsys):
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    for section in SECTIONS.values():
        assert f"[{section.name}] {section.help}" in out
    assert "  lr = 0.01 " in out and "Adam's learning rate (a number > 0)" in out
    assert "algorithm = 'fedavg'" in out and f"one of: {', '.join(ALGORITHMS)})" in out
    assert all(f"  {name} = " in out for name in KEYS)
    # sections appear in order and each key under its own
    positions = [out.index(f"[{name}]") for name in SECTIONS]
    assert positions == sorted(positions)
    assert out.index("[fedavgm]") < out.index("server-momentum = 0.5") < out.index("[fedlog]")


def test_one_key_in_full(capsys):
    assert main(["config", "server-momentum"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("server-momentum: ")
    assert "default  0.5" in out and "a number in [0, 1)" in out and "read by  algorithm fedavgm" in out
    assert main(["config", "privacy"]) == 0
    out = capsys.readouterr().out
    assert "dp-sgd" in out and "client-dp" in out and "DP-SGD with Opacus" in out


def test_an_unknown_key_is_one_line_with_a_suggestion(capsys):
    assert main(["config", "lrr"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        "stamen config: error: unknown run-config key 'lrr'; did you mean 'lr'?; `stamen config` lists every key"
    )


def test_the_reference_table_is_the_generated_one(capsys):
    assert main(["config", "--markdown"]) == 0
    table = capsys.readouterr().out.strip()
    assert table == markdown_table()
    assert REFERENCE == PROJECT / "docs" / "reference.md"
    assert f"{TABLE_MARK}\n{table}\n" in REFERENCE.read_text()
    assert all(f"| `{name}` |" in table for name in [*KEYS, *plugin_keys()])  # the algorithms' keys too


def test_the_generator_replaces_only_the_table_after_the_mark(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(f"# keys\n\n{TABLE_MARK}\n| old | table |\n|---|---|\n\nafter the table\n")
    assert update_table(page) is True
    assert page.read_text() == f"# keys\n\n{TABLE_MARK}\n{markdown_table()}\n\nafter the table\n"
    assert update_table(page) is False
    unmarked = tmp_path / "unmarked.md"
    unmarked.write_text("| a | b |\n")
    with pytest.raises(ValueError, match="has no line"):
        update_table(unmarked)
    assert unmarked.read_text() == "| a | b |\n"


@pytest.mark.slow
def test_loads_neither_torch_nor_flower():
    code = (
        "import sys, contextlib, io; from stamen.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()): assert main(['config']) == 0\n"
        "print(sorted(m for m in ('torch', 'torch_geometric', 'flwr') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
