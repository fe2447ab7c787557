"""Every number option of every ``stamen`` command refuses NaN and infinity, as argparse refuses a typo.

The options are found by walking each command's parser (its sub-commands too), so an
option added later with ``type=float`` fails :func:`test_no_option_reads_a_plain_float`.
"""

import argparse
from collections.abc import Iterator
from pathlib import Path

import pytest

from stamen.cli.main import SUMMARIES, build_parser
from stamen.cli.main import main as stamen
from stamen.common.options import finite_float


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[argparse._SubParsersAction]:
    return (action for action in parser._actions if isinstance(action, argparse._SubParsersAction))


def _options(
    parser: argparse.ArgumentParser, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], argparse.Action]]:
    """(command words, action) of every option below ``parser``."""
    for action in parser._actions:
        if action.option_strings:
            yield path, action
    for sub in _subparsers(parser):
        for name, child in sub.choices.items():
            yield from _options(child, (*path, name))


def _every_option() -> list[tuple[tuple[str, ...], argparse.Action]]:
    found = []
    for command in SUMMARIES:
        parser = build_parser(command)
        (sub,) = _subparsers(parser)
        found += list(_options(sub.choices[command], (command,)))
    return found


OPTIONS = _every_option()
NUMBERS = [(path, action) for path, action in OPTIONS if action.type is finite_float]


def test_the_walk_finds_the_number_options():
    named = {(path, action.option_strings[0]) for path, action in NUMBERS}
    assert (("audit", "privacy"), "--lr") in named and (("partition",), "--alpha") in named
    assert (("certify",), "--time-limit") in named and (("bench", "privacy"), "--lr") in named


def test_no_option_reads_a_plain_float():
    plain = [f"stamen {' '.join(path)} {action.option_strings[0]}" for path, action in OPTIONS if action.type is float]
    assert plain == [], "use stamen.common.options.finite_float"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "NaN", "Infinity"])
@pytest.mark.parametrize(
    "path,option",
    [(p, a.option_strings[0]) for p, a in NUMBERS],
    ids=[f"{' '.join(p)} {a.option_strings[0]}" for p, a in NUMBERS],
)
def test_every_number_option_refuses_a_non_finite_value(path, option, value, capsys):
    with pytest.raises(SystemExit) as stop:
        build_parser(path[0]).parse_args([*path, f"{option}={value}"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err  # one line, not argparse's usage first
    assert f"error: argument {option}: must be a finite number, got {value!r}; see stamen " in err[0], err


def test_a_finite_number_still_reads():
    assert finite_float("1e-5") == 1e-5 and finite_float("-3") == -3.0
    with pytest.raises(argparse.ArgumentTypeError, match="must be a number, got 'ten'"):
        finite_float("ten")


@pytest.mark.parametrize(
    "argv,option",
    [
        (["audit", "privacy", "--lr", "nan", "--output", "{out}/audit.json"], "--lr"),
        (["partition", "--alpha", "nan", "--partitioner", "label-dirichlet", "--clients", "3"], "--alpha"),
        (["certify", "--time-limit", "inf", "--out", "{out}"], "--time-limit"),
    ],
)
def test_the_cli_refuses_before_anything_is_written(argv, option, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as stop:
        stamen([word.format(out=out) for word in argv])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert f"argument {option}: must be a finite number" in err[-1], err
    assert not out.exists() and list(Path(tmp_path).iterdir()) == []
