"""The Flower app's ServerApp, as ``pyproject.toml`` names it: Stamen's ServerApp (:mod:`server.app`),
with the simulation's link state indexed by node in the process that loads it.

``flwr run``'s simulation loads the ServerApp into the process that holds Flower's in-memory
link state and feeds the Ray actors; importing this module there patches that state's
lookup of a node's messages (:mod:`simulations.flower_internals.link_state`), which at 1,000
clients kept a core busy and the process's other threads waiting (benchmarks/scale-1000-clients.md).
Elsewhere (a deployment's ServerApp process, whose link state is the SuperLink's) the patch
touches a class nobody uses there. The ServerApp itself lives in ``server/`` (public Flower API
only); the in-process engine calls :func:`server.app.serve` directly.
"""

from server.app import app
from simulations.flower_internals.link_state import index_messages_by_node

index_messages_by_node()

__all__ = ["app"]
