"""Flower's console log handler in this process, coloured only on a terminal.

Replaces: ``flwr.common.logger.console_handler`` and ``update_console_handler`` (not public
API): the handler Flower installs on its ``flwr`` logger, which writes ANSI colour codes by
default, also into a file or a pipe its stream was redirected to (``stamen audit``, the
in-process engine's ``--verbose``, the benches).

Dropping it: configure the ``flwr`` logger's handlers through :mod:`logging` (Flower's
handler is the one whose formatter colours), or use Flower's switch if it becomes public.
"""

from __future__ import annotations

from flwr.common.logger import console_handler, update_console_handler


def colour_only_on_a_terminal() -> None:
    """Colour Flower's console lines only when its stream is a terminal."""
    try:
        terminal = bool(console_handler.stream.isatty())
    except (AttributeError, ValueError, OSError):  # a closed or odd stream: no terminal
        terminal = False
    update_console_handler(colored=terminal)
