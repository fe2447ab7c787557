"""The Flower release this adapter was written for, and the check every import of the adapter makes.

The adapter's modules reach into Flower modules that are not public API; Flower changes them
between minor releases without notice (1.42 moved several). On another Flower the adapter
refuses to load, in one line that names the installed Flower, the supported one and what to
do, rather than failing later in the middle of a deployment with an ``AttributeError`` deep
in Flower. ``pyproject.toml`` pins the same range (a test keeps the two equal).

Replaces: nothing of Flower's; it reads the public ``flwr.__version__``.

Dropping it: it goes with the adapter's last module; until then, move :data:`SUPPORTED`,
:data:`REQUIREMENT` and ``pyproject.toml``'s pin together when the adapter is ported to a new
Flower (``docs/upgrading-flower.md``).
"""

from __future__ import annotations

import re

SUPPORTED = (1, 42)  # Flower 1.42.x, the release every module of the adapter was written against
REQUIREMENT = "flwr>=1.42,<1.43"  # that range as pip reads it (pyproject.toml's pin)


class UnsupportedFlower(RuntimeError):
    """The installed Flower is not one the adapter was written for; the message is one line saying what to do."""


def supported_range() -> str:
    """The supported Flower releases in words: ``1.42.x``."""
    return f"{SUPPORTED[0]}.{SUPPORTED[1]}.x"


def check_flower_version(installed: str | None = None) -> None:
    """Raise :class:`UnsupportedFlower` unless ``installed`` (default: ``flwr.__version__``) is a supported release."""
    if installed is None:
        # on use: flwr stays out of this module's import
        import flwr

        installed = str(flwr.__version__)
    match = re.match(r"(\d+)\.(\d+)(?:\D|$)", installed)
    if match is None or (int(match[1]), int(match[2])) != SUPPORTED:
        raise UnsupportedFlower(
            f"Flower {installed} is installed, but Stamen's Flower adapter (stamen/simulations/flower_internals) "
            f'supports Flower {supported_range()} only: install it with pip install "{REQUIREMENT}" '
            "(to move Stamen to another Flower, see docs/upgrading-flower.md)"
        )
