"""Flower's non-public modules, behind one door: the only Stamen code that imports them.

Flower documents a public API (``flwr.app``, ``flwr.serverapp``, ``flwr.clientapp``,
``flwr.common``'s top level, ...); what lies deeper (``flwr.supercore``, ``flwr.supernode``,
``flwr.superlink``, ``flwr.proto``, ``flwr.cli``, ...) changes between releases without
notice. Stamen's deployment tooling needs some of it (a SuperLink split over two addresses,
a resident ClientApp, the Fleet API's wire format), and so do the in-process engine and the
run-config defaults. Every such import lives in one module of this package, one concern per
module, each saying what it replaces and from which Flower module:

- :mod:`.version`: the Flower release the adapter was written for (checked on import);
- :mod:`.task_identity`: the task identity Flower stamps on every message;
- :mod:`.project_config`: the app's ``pyproject.toml`` and ``key=value`` overrides, read as ``flwr run`` does;
- :mod:`.runtime_api`: a ClientApp task's Runtime API client and its inputs (message, context, run, bundle);
- :mod:`.app_loading`: installing an app bundle (FAB) and loading its ClientApp;
- :mod:`.clientapp_task`: one ClientApp task served as ``flwr-clientapp`` serves it;
- :mod:`.parent_monitor`: stopping a process when its parent is gone;
- :mod:`.superlink`: Flower's SuperLink app, built as ``flower-superlink`` builds it;
- :mod:`.wire`: the Fleet and Runtime APIs' protobuf messages;
- :mod:`.console`: Flower's console log handler, coloured only on a terminal;
- :mod:`.link_state`: the simulation's in-memory link state, its messages indexed by node.

Importing the package checks the installed Flower (:func:`check_flower_version`): on another
release it raises :class:`UnsupportedFlower`, a ``RuntimeError`` whose message is one line
(``stamen`` prints it as ``stamen COMMAND: error: ...``, exit 2). ``server/`` and ``client/``
(a floor below) use public API only; ``tests/test_flower_internals.py`` finds any non-public
import outside this package. How to move to a new Flower, and how to drop each module once
Flower offers a public way: ``docs/upgrading-flower.md``.
"""

from stamen.simulations.flower_internals.version import UnsupportedFlower, check_flower_version

check_flower_version()

__all__ = ["UnsupportedFlower", "check_flower_version"]
