"""``did you mean X?`` for a mistyped name (:mod:`difflib`), as one clause of a one-line error."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(word: str, known: Iterable[str], before: str = "; ") -> str:
    """``"; did you mean 'lr'?"`` for the closest known name, or ``""`` when none is close."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f"{before}did you mean {close[0]!r}?" if close else ""


def one_of(names: Iterable[str]) -> str:
    """``"a, b or c"``."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
