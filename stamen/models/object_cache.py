"""Results kept while the object they were computed from lives, and for a tensor while it is unwritten.

A client's subgraph is the same object every round in a process (:func:`stamen.client.job.client_data`),
and so are its feature and edge tensors: what is derived from them alone (a sparse layout, a
normalised adjacency, the subgraph left after an unlearning request) is built once and kept.
An entry is found by the object's ``id`` and checked against a weak reference to it, so a new
object that reuses a freed one's ``id`` is never served the old result, and the entry goes with
the object. A tensor written in place has a new version counter and is built again; an
inference tensor (made under :func:`torch.inference_mode`) has none and is built every time.
Other objects are taken as unchanging: Stamen never writes to a client's cached subgraph
(a view that differs is a new object, e.g. :func:`copy.copy` with one attribute replaced).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from torch import Tensor

T = TypeVar("T")
_CACHE: dict[tuple[tuple[int, ...], Any], tuple[tuple[weakref.ref, ...], tuple[int, ...], Any]] = {}


def kept(obj: object, key: Any, build: Callable[[], T]) -> T:
    """``build()`` once per live ``obj`` (and ``key``); the kept result after that."""
    return kept_all((obj,), key, build)


def kept_all(objects: Sequence[object], key: Any, build: Callable[[], T]) -> T:
    """:func:`kept` for a result computed from several objects: built once per live combination of them.

    The entry goes when any of them goes, and is built again when any tensor among them was written.
    """
    if any(isinstance(obj, Tensor) and obj.is_inference() for obj in objects):
        return build()
    versions = tuple(obj._version if isinstance(obj, Tensor) else 0 for obj in objects)
    slot = (tuple(map(id, objects)), key)
    entry = _CACHE.get(slot)
    if entry is not None and entry[1] == versions and all(ref() is obj for ref, obj in zip(entry[0], objects)):
        return entry[2]
    value = build()
    # the callback holds the cache itself: at interpreter exit the module's globals may already be None
    refs = tuple(weakref.ref(obj, lambda _, slot=slot, cache=_CACHE: cache.pop(slot, None)) for obj in objects)
    _CACHE[slot] = (refs, versions, value)
    return value
