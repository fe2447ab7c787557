"""What a ClientApp mod is handed: the next handler it calls.

Flower's own alias, ``flwr.clientapp.typing.ClientAppCallable``, is not public API; every mod of
:mod:`stamen.client.app` (:mod:`stamen.client.packing`, :mod:`stamen.client.secagg`,
:mod:`stamen.client.clipping`) types its
``call_next`` with this one.
"""

from __future__ import annotations

from collections.abc import Callable

from flwr.app import Context, Message

ClientAppCallable = Callable[[Message, Context], Message]
