"""``--help`` as plain text: the Sphinx markup of the docstrings it is made from, and each default once.

A command's description is its module's docstring, written for the API docs:
``:mod:`stamen.simulations.preflight```, ``:class:`~stamen.server.rundir.RunDirectory```, ````run.log````.
A terminal shows them as written, so every parser's help goes through :func:`plain`: a role
keeps its target (``~`` keeps its last part, ``text <target>`` keeps the text) and double
backticks become single quotes around the literal. :class:`HelpFormatter` shows each
option's default once: not again where the help already names it, and not for an option
without one (``None``, an empty list or string, ``False``).
"""

from __future__ import annotations

import argparse
import re

_ROLE = re.compile(r":[a-z]+(?::[a-z]+)?:`([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")
_TARGET = re.compile(r"^(.*?)\s*<([^>]+)>$")


def _role(match: re.Match[str]) -> str:
    text = match.group(1)
    named = _TARGET.match(text)
    if named:
        return named.group(1)
    if text.startswith("~"):
        return text[1:].rsplit(".", 1)[-1]
    return text


def plain(text: str) -> str:
    """``text`` with Sphinx roles and double-backtick literals as plain text."""
    return _LITERAL.sub(r"'\1'", _ROLE.sub(_role, text))


class HelpFormatter(argparse.RawDescriptionHelpFormatter, argparse.ArgumentDefaultsHelpFormatter):
    """The description and examples as written, each option's default shown once."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_text = action.help or ""
        if "default" in help_text.lower() or action.default in (None, "", [], False, argparse.SUPPRESS):
            return action.help
        return super()._get_help_string(action)
