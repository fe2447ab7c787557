"""What a command reports besides bad input (``ValueError`` and friends: exit 2)."""

from __future__ import annotations


class RunFailed(RuntimeError):
    """A run that started and did not finish: exit 1, with the reason and where the logs are."""


class RunInterrupted(RuntimeError):
    """Ctrl-C or SIGTERM stopped a run (after every process of it was stopped): exit 130."""
