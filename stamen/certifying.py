"""Certificates from Python: exact label-flip certificates of a graph's NTK machines, as ``stamen certify`` gives.

:func:`certify` takes ``stamen certify``'s options as keyword arguments (``--csbm-nodes 40`` is
``csbm_nodes=40``), checks them with the command's own check (:meth:`stamen.contract.certify_config.
CertifyConfig.from_values` and ``--out``) and calls the command's one path
(:func:`stamen.cli.commands.certify.certify_job`): the same journal in ``out`` (an interrupted
call resumes), the same ``certificate.json``, plot and ``report.md``. Only the printing differs:
nothing unless ``progress=True``.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from stamen.config import call_text
from stamen.contract.certify_config import OPTIONS
from stamen.simulations.errors import one_line


@dataclass(frozen=True)
class Certificates:
    """A finished certification.

    Attributes:
        dir: the output folder (``certificate.json``, ``certified_accuracy.png``, ``report.md``).
        report: the dict ``certificate.json`` holds: the job's settings, the instance, and per
            architecture its clean accuracy, per-target results and per-budget aggregates.
    """

    dir: Path
    report: dict[str, Any]

    @property
    def architectures(self) -> dict[str, dict[str, Any]]:
        """Each architecture's results (``report["architectures"]``)."""
        return self.report["architectures"]

    def certified_accuracy(self, arch: str) -> dict[int, float]:
        """``{budget: certified accuracy}`` of ``arch`` (a share of the targets, 0..1)."""
        aggregates = self.architectures[arch]["aggregates"]
        return {int(budget): figures["certified_accuracy"] for budget, figures in aggregates.items()}


def _option_value(name: str, value: Any) -> Any:
    """A Python value as the option takes it: a list of budgets or architectures as a comma list, a number
    ``C`` as text, a path as a string."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return ",".join(str(part) for part in value)
    if name == "C" and isinstance(value, numbers.Real) and not isinstance(value, bool):
        return repr(float(value))
    return value


def certify(*, out: str | os.PathLike[str], progress: bool = False, **options: Any) -> Certificates:
    """Certify as ``stamen certify`` does, writing into ``out``; returns the certificates.

    Args:
        out: the output folder (``--out``); an interrupted job's folder resumes it.
        progress: show each stage on stderr (otherwise nothing is printed).
        options: ``stamen certify``'s options, snake_case (``dataset="csbm-paper"``, ``csbm_nodes=40``,
            ``arch="gcn,sgc"`` or ``["gcn", "sgc"]``, ``budgets=[1, 2]``, ``C=0.5``, ``overwrite=True``);
            ``stamen certify --help`` lists them and their defaults. One exception: ``workers``
            defaults to 1 here (the command's default is every core): worker processes start by
            importing the calling script, so pass ``workers=N`` only from a script whose top level
            is guarded by ``if __name__ == "__main__":``; the answers are the same for every N.

    Raises:
        ValueError: bad input, before any slow work; the message is the line ``stamen certify`` prints.
        FileNotFoundError: a ``graph`` or ``kernel`` file, or the dataset's files, are missing.
        stamen.simulations.errors.RunInterrupted: Ctrl-C; the finished units stay in ``out`` for the same call.
    """
    # on use: numpy stays out of this module's import
    from stamen.cli.commands.certify import certify_job, checked_config

    by_attribute = {key.attribute: name for name, key in OPTIONS.items()}
    values: dict[str, Any] = {"out": _option_value("out", out), "workers": 1}
    for attribute, value in options.items():
        name = by_attribute.get(attribute, attribute.replace("_", "-"))
        if name == "json":
            raise ValueError("json: stamen.certify returns the report; read .report instead of printing it")
        values[name] = _option_value(name, value)
    command = call_text("stamen.certify", out=os.fspath(out), **options)
    try:
        config = checked_config(values)
        done = certify_job(config, command=command, screen=Console(stderr=True, quiet=not progress))
    except ValueError as error:
        raise ValueError(one_line(error)) from None
    return Certificates(done.out, done.report)
