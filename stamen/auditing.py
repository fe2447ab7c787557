"""The privacy audit from Python: :func:`audit` is ``stamen audit privacy`` (the same function), as objects.

    report = stamen.audit(csbm_nodes=300, rounds=2, dp_sgd_epsilons=[4], client_dp_epsilons=[])
    [(r.privacy, r.accountant_epsilon, r.lower_bound) for r in report.results], report.violated

Each audited run trains through the federated engine with canaries planted in the clients' training
nodes and turns membership guesses into an empirical lower bound on epsilon
(:func:`stamen.cli.commands.audit.audit_privacy`); with ``out`` each audited run is kept as it
finishes and the same call resumes an interrupted audit.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any

from stamen.common.suggest import did_you_mean
from stamen.config import call_text
from stamen.simulations.errors import one_line

if TYPE_CHECKING:
    from stamen.cli.commands.audit import AuditReport, AuditResult, AuditSettings

__all__ = ["AuditReport", "AuditResult", "AuditSettings", "audit"]


def audit(
    settings: AuditSettings | None = None,
    *,
    out: str | os.PathLike[str] | None = None,
    progress: bool = False,
    **options: Any,
) -> AuditReport:
    """Audit a run without DP, then DP-SGD and client-level DP at each budget; return the report.

    Args:
        settings: the audit's options (default: ``stamen audit privacy``'s defaults).
        out: a new ``.json`` file the report is written to; each audited run is kept in ``<out>.partial.jsonl``
            as it finishes and the same call resumes from it (without ``out`` nothing is kept).
        progress: show the audit's progress on stderr (otherwise nothing is printed).
        options: fields of :class:`AuditSettings` that replace those of ``settings``, e.g. ``csbm_nodes=300``,
            ``dp_sgd_epsilons=[1, 4]``.

    Raises:
        ValueError: bad input, before any run; the message is the line ``stamen audit privacy`` prints.
        stamen.simulations.errors.RunInterrupted: Ctrl-C; with ``out``, the finished runs are kept.
    """
    # on use: torch, torch_geometric, flwr stay out of this module's import
    from stamen.cli.commands.audit import AuditSettings, _output, audit_privacy

    command = call_text("stamen.audit", settings, out=out, **options)
    try:
        chosen = _settings(settings or AuditSettings(), options)
        output = _output(os.fspath(out)) if out is not None else None
        return audit_privacy(chosen, output, command, show=progress)
    except ValueError as error:
        raise ValueError(one_line(error)) from None


def _settings(settings: AuditSettings, options: dict[str, Any]) -> AuditSettings:
    """``settings`` with ``options`` in place of its fields; ValueError in one line for an unknown option or a value
    of the wrong type."""
    types = {field.name: type(field.default) for field in dataclasses.fields(settings)}
    for name, value in options.items():
        if name not in types:
            raise ValueError(f"stamen.audit has no option {name!r}{did_you_mean(name, types)}")
        if types[name] is tuple:
            if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
                raise ValueError(f"{name} must be a list of numbers, e.g. [1, 4, 16]; got {value!r}")
            options[name] = tuple(value)
        elif not _fits(value, types[name]):
            raise ValueError(f"{name} must be {_kind(types[name])}, got {value!r}")
    return dataclasses.replace(settings, **options)


def _fits(value: object, kind: type) -> bool:
    if isinstance(value, bool):
        return False
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


def _kind(kind: type) -> str:
    return {int: "a whole number", float: "a number", str: "a string"}.get(kind, kind.__name__)
