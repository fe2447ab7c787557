"""Importing Opacus without its one side effect on logging, and without its warnings that say nothing to a user.

Opacus calls ``logging.basicConfig`` when it is imported (``opacus.utils.module_utils``),
which gives the root logger a handler; Flower's logger propagates to the root, so every
Flower line then prints twice, and its DEBUG lines appear too. Import Opacus through
:func:`opacus_quietly` and the root logger keeps the handlers and level it had.

Importing this module also silences two warnings every DP-SGD run would print: the RDP
accountant's "Optimal order is the largest alpha" (the epsilon it reports is still an upper
bound, only perhaps a looser one than a wider alpha grid would give) and torch's "Full
backward hook is firing ..." for the per-sample-gradient hooks of Opacus on a first layer
whose inputs need no gradient (the per-sample gradients are those of the parameters).
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator


def silence_warnings() -> None:
    """Ignore the two warnings named in the module docstring (done when this module is imported)."""
    warnings.filterwarnings("ignore", message="Optimal order is the largest alpha", category=UserWarning)
    warnings.filterwarnings("ignore", message="Full backward hook is firing when gradients", category=UserWarning)


silence_warnings()


@contextlib.contextmanager
def opacus_quietly() -> Iterator[None]:
    """Import Opacus inside this block; handlers it adds to the root logger are removed afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield
    finally:
        for handler in list(root.handlers):
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
