"""Federated unlearning after training, one module per method behind one registry.

With ``unlearn-request`` set, the ServerApp forgets after its last round
(:func:`unlearn_federation`): a roll call, the method of ``unlearn-method`` (or retraining
when a client holding data to forget does not answer and the method needs it), an
evaluation, ``unlearn.json`` and ``unlearn.md``. The in-process experiment
(:mod:`stamen.experiments.unlearn_experiment`) drives the same :func:`forget` over an in-process grid.

- :mod:`~stamen.server.unlearning.base`: the contract (:class:`UnlearningMethod`, :class:`UnlearningJob`,
  :class:`MethodResult`);
- :mod:`~stamen.server.unlearning.registry`: :data:`METHODS`, name -> method;
- :mod:`~stamen.server.unlearning.wash`, :mod:`~stamen.server.unlearning.laf`,
  :mod:`~stamen.server.unlearning.federaser`, :mod:`~stamen.server.unlearning.baselines`: the methods' message flows;
- :mod:`~stamen.server.unlearning.rollcall`, :mod:`~stamen.server.unlearning.flow`,
  :mod:`~stamen.server.unlearning.evaluation`, :mod:`~stamen.server.unlearning.results`: roll call and fallback, the
  flow, the figures, the files.

The clients' side of every message is :mod:`stamen.client.unlearning`.
"""

from stamen.server.unlearning.base import MethodResult, UnlearningJob, UnlearningMethod
from stamen.server.unlearning.flow import Forgetting, forget, unlearn_federation
from stamen.server.unlearning.registry import METHODS, RETRAIN, unlearning_method
from stamen.server.unlearning.results import UnlearningResult
from stamen.server.update_history import history_recorder

__all__ = [
    "METHODS",
    "RETRAIN",
    "Forgetting",
    "MethodResult",
    "UnlearningJob",
    "UnlearningMethod",
    "UnlearningResult",
    "forget",
    "history_recorder",
    "unlearn_federation",
    "unlearning_method",
]
