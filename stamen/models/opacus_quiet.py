"""Importing Opacus without its one side effect on logging.

Opacus calls ``logging.basicConfig`` when it is imported (``opacus.utils.module_utils``),
which gives the root logger a handler; Flower's logger propagates to the root, so every
Flower line then prints twice, and its DEBUG lines appear too. Import Opacus through
:func:`opacus_quietly` and the root logger keeps the handlers and level it had.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator


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
