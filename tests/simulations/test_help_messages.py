"""``--help`` and messages: plain text, each default once, every audit option helped, ``--out``
everywhere, a closed pipe, the data-root hint, and logs without colour codes (one function)."""

import argparse
import io
import logging
import sys

import pytest

from stamen.cli.helptext import plain
from stamen.cli.main import SUMMARIES, build_parser, main
from stamen.server.runlog import run_log, strip_ansi
from stamen.simulations.relay import clean_line, relay


def _parsers(parser: argparse.ArgumentParser, name: str = "stamen"):
    """``parser`` and every parser below it, with its command line."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _parsers(sub, f"{name} {sub_name}")


def _every_parser():
    for command in SUMMARIES:
        yield from _parsers(build_parser(command)._subparsers._group_actions[0].choices[command], f"stamen {command}")


def test_plain_turns_sphinx_markup_into_plain_text():
    text = (
        "see :mod:`stamen.simulations.preflight`, :class:`~stamen.server.rundir.RunDirectory`,"
        " :func:`x <stamen.server.app.serve>`"
    )
    assert plain(text) == "see stamen.simulations.preflight, RunDirectory, x"
    assert plain("keeps ``run.log`` and ``a b``") == "keeps 'run.log' and 'a b'"


def test_every_help_is_plain_text_with_each_default_once():
    checked = 0
    for name, parser in _every_parser():
        text = parser.format_help()
        assert "``" not in text and ":mod:`" not in text and ":class:`" not in text, name
        for action in parser._actions:
            if action.help in (None, argparse.SUPPRESS):
                continue
            shown = parser._get_formatter()._expand_help(action) if action.help else ""
            assert shown.lower().count("default") <= 1, (name, action.option_strings, shown)
            checked += 1
    assert checked > 100


def test_sweep_help_names_each_default_once(capsys):
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    out = capsys.readouterr().out
    assert out.count("(default: 1)") == 1 and "(default: 0) (default: 0)" not in out
    assert "(default: None)" not in out and "(default: [])" not in out


def test_every_audit_privacy_option_has_help_and_out_is_its_spelling(tmp_path, capsys):
    privacy = dict(_parsers(build_parser("audit")))["stamen audit privacy"]
    helped = [a for a in privacy._actions if a.help != argparse.SUPPRESS and a.option_strings != ["-h", "--help"]]
    assert helped and [a.option_strings for a in helped if not a.help] == []
    assert "--out" in privacy._option_string_actions
    with pytest.raises(SystemExit) as stop:
        main(["audit", "privacy", "--output", str(tmp_path / "a.json")])
    assert stop.value.code == 2
    assert "--output is now --out" in capsys.readouterr().err


def test_a_reader_that_goes_away_ends_the_command_quietly(monkeypatch, capsys):
    class Gone(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Gone())
    assert main(["config"]) == 141
    assert capsys.readouterr().err == ""


def test_a_missing_data_root_names_the_run_config_key_and_the_option(capsys):
    assert main(["run", "--engine", "inprocess", "--quiet", "-c", "dataset='cora'"]) == 2
    err = capsys.readouterr().err
    assert "run-config key data-root" in err and "-c \"data-root='/data'\"" in err and "STAMEN_DATA" in err


def test_flower_logs_are_relayed_without_colour_codes_or_the_supernodes_warning():
    coloured = "\x1b[92mINFO \x1b[0m:      stamen: round 1/1 {}\n"
    assert clean_line(coloured) == "INFO :      stamen: round 1/1 {}\n"
    assert (
        clean_line("\x1b[93mWARNING \x1b[0m: Since flwr 1.32, default simulated SuperNodes changed from 10 to 2.\n")
        is None
    )
    sink = io.StringIO()
    relay(["a\x1b[1mb\x1b[0m\n", "Since flwr 1.32, default simulated SuperNodes changed from 10 to 2.\n"], [sink])
    assert sink.getvalue() == "ab\n"
    assert strip_ansi("\x1b[31mred\x1b[0m \x1b]x") == "red x"


def test_run_log_is_plain_and_appended(tmp_path):
    logger = logging.getLogger("flwr")
    with run_log(tmp_path):
        logger.warning("\x1b[93mcoloured\x1b[0m line")
    with run_log(tmp_path):  # a resumed run appends
        logger.warning("second")
    text = (tmp_path / "run.log").read_text()
    assert "\x1b" not in text and "coloured line" in text and text.index("coloured") < text.index("second")
    logger.warning("after the run")
    assert "after the run" not in (tmp_path / "run.log").read_text()


def test_run_log_keeps_the_records_of_stamen_loggers_once_where_flowers_go(tmp_path):
    logger, flower = logging.getLogger("stamen.server.some_part"), logging.getLogger("flwr")
    console = io.StringIO()  # stands for Flower's console handler
    flower.addHandler(shown := logging.StreamHandler(console))
    try:
        assert logging.getLogger("stamen").level == logging.NOTSET
        with run_log(tmp_path):
            logger.info("an info line of a stamen module")
            flower.warning("a flower line")
        logger.warning("after the run")
    finally:
        flower.removeHandler(shown)
    text = (tmp_path / "run.log").read_text()
    assert text.count("an info line of a stamen module") == 1 and "a flower line" in text
    assert console.getvalue().count("an info line of a stamen module") == 1
    assert "after the run" not in text and logging.getLogger("stamen").level == logging.NOTSET
    assert logging.getLogger("stamen").propagate and not logging.getLogger("stamen").handlers


def test_an_in_process_verbose_run_keeps_its_run_log(tmp_path, capsys):
    config = f"num-server-rounds=1 csbm-nodes=300 output-dir='{tmp_path}' run-name='v'"
    assert main(["run", "--engine", "inprocess", "--verbose", "--clients", "3", "-c", config]) == 0
    text = (tmp_path / "v" / "run.log").read_text()
    assert "stamen: round 1/1" in text and "stamen: results of" in text and "\x1b" not in text


@pytest.mark.slow
@pytest.mark.ray
def test_a_flower_run_keeps_a_plain_run_log_and_hides_the_supernodes_warning(tmp_path):
    import os
    import subprocess

    config = f"num-server-rounds=1 csbm-nodes=300 output-dir='{tmp_path}' run-name='f'"
    result = subprocess.run(
        [sys.executable, "-m", "stamen.cli.main", "run", "--verbose", "--clients", "3", "-c", config],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    text = (tmp_path / "f" / "run.log").read_text()
    assert "stamen: round 1/1" in text and "\x1b" not in text
    assert "stamen: round 1/1" in result.stdout and "\x1b" not in result.stdout  # the relayed stream
    assert "SuperNodes changed from 10 to 2" not in result.stdout + text


def test_flower_console_colours_only_a_terminal(monkeypatch):
    from flwr.common.logger import console_handler

    from stamen.simulations.relay import plain_flower_console

    monkeypatch.setattr(console_handler, "colored", True)
    monkeypatch.setattr(console_handler, "stream", io.StringIO())  # a file or a pipe: no terminal
    plain_flower_console()
    record = logging.LogRecord("flwr", logging.INFO, __file__, 1, "plain", None, None)
    assert console_handler.colored is False and "\x1b" not in console_handler.format(record)
