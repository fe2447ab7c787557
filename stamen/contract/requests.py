"""Forgetting requests as typed values: ``client:i``, ``nodes:i:FRACTION``, ``class:c``.

A request names the data to forget:

- ``client:i``: everything client ``i`` contributed (its training nodes); the client leaves.
- ``nodes:i:FRACTION``: a seeded share of client ``i``'s training nodes.
- ``class:c``: every training node of class ``c``, on every client.

:func:`parse_request` is the one parser of request strings. At config time, with no
federation known yet, it checks the shape; given the number of clients and classes it
checks the ranges too. No torch here: the run config, both apps and the command line
import it cheaply. The masks and the remaining federation a request makes are torch-side
(:mod:`stamen.unlearn.requests`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RequestKind(StrEnum):
    """What a request forgets (the value is the prefix of its text)."""

    CLIENT = "client"
    NODES = "nodes"
    CLASS = "class"


KINDS = tuple(kind.value for kind in RequestKind)
SHAPES = {"client": "client:i", "nodes": "nodes:i:FRACTION", "class": "class:c"}


@dataclass(frozen=True)
class Request:
    """One forgetting request (see the module docstring).

    Attributes:
        kind: ``client``, ``nodes`` or ``class``.
        client: the requesting client (``client``/``nodes``), else ``None``.
        fraction: share of the client's training nodes (``nodes``), else ``None``.
        label: the forgotten class (``class``), else ``None``.
    """

    kind: str
    client: int | None = None
    fraction: float | None = None
    label: int | None = None

    def __str__(self) -> str:
        if self.kind == "client":
            return f"client:{self.client}"
        if self.kind == "nodes":
            return f"nodes:{self.client}:{self.fraction:g}"
        return f"class:{self.label}"

    @property
    def slug(self) -> str:
        """A file-system friendly name: ``client-0``, ``nodes-0-0.5``, ``class-2``."""
        return str(self).replace(":", "-")

    def holders(self, num_clients: int) -> list[int]:
        """The clients that may hold data to forget: every client for a class, else the requesting one."""
        if self.kind == "class" or self.client is None:  # a client/nodes request always names its client
            return list(range(num_clients))
        return [self.client]

    def leaving(self) -> int | None:
        """The client that leaves the federation (a ``client:`` request), else ``None``."""
        return self.client if self.kind == "client" else None


def parse_request(text: str, num_clients: int | None = None, num_classes: int | None = None) -> Request:
    """Parse ``client:i``, ``nodes:i:FRACTION`` or ``class:c``; raise ``ValueError`` with one line.

    Ranges are checked against ``num_clients`` and ``num_classes`` where given.
    """
    return _parse(text, num_clients, num_classes, check_fraction=True)


def _parse(text: str, num_clients: int | None, num_classes: int | None, check_fraction: bool) -> Request:
    parts = [part.strip() for part in str(text).strip().split(":")]
    kind = parts[0]
    if kind not in SHAPES:
        raise ValueError(f"unknown request {text!r}; use client:i, nodes:i:FRACTION or class:c")
    if len(parts) != (3 if kind == "nodes" else 2):
        raise ValueError(f"request {text!r} must look like {SHAPES[kind]}")
    try:
        index = int(parts[1])
    except ValueError:
        raise ValueError(f"request {text!r}: {parts[1]!r} is not an integer") from None
    if kind == "class":
        if index < 0 or (num_classes is not None and index >= num_classes):
            bound = f"0..{num_classes - 1}" if num_classes is not None else "0.."
            raise ValueError(f"request {text!r}: class {index} is out of range {bound}")
        return Request("class", label=index)
    if index < 0 or (num_clients is not None and index >= num_clients):
        bound = f"0..{num_clients - 1}" if num_clients is not None else "0.."
        raise ValueError(f"request {text!r}: client {index} is out of range {bound}")
    if kind == "client":
        if num_clients is not None and num_clients < 2:
            raise ValueError(f"request {text!r}: forgetting a whole client needs at least 2 clients")
        return Request("client", client=index)
    try:
        fraction = float(parts[2])
    except ValueError:
        raise ValueError(f"request {text!r}: fraction {parts[2]!r} is not a number") from None
    if check_fraction and not (0.0 < fraction <= 1.0):
        raise ValueError(f"request {text!r}: fraction {fraction:g} must lie in (0, 1]")
    return Request("nodes", client=index, fraction=fraction)


def is_request(text: str) -> bool:
    """Whether ``text`` is empty (no request) or has the shape of one (ranges, the fraction's too,
    are checked where the federation is known, with the parser's own message)."""
    if text == "":
        return True
    try:
        _parse(text, None, None, check_fraction=False)
    except ValueError:
        return False
    return True
