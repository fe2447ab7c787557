"""Federated unlearning after training, one module per method behind one registry.

With ``unlearn-request`` set, the ServerApp forgets after its last round
(:func:`unlearn_federation`): a roll call, the method of ``unlearn-method`` (or retraining
when a client holding data to forget does not answer and the method needs it), an
evaluation, ``unlearn.json`` and ``unlearn.md``. The in-process experiment
(:mod:`simulations.unlearn_experiment`) drives the same :func:`forget` over an in-process grid.

- :mod:`~server.unlearning.base`: the contract (:class:`UnlearningMethod`, :class:`UnlearningJob`,
  :class:`MethodResult`);
- :mod:`~server.unlearning.registry`: :data:`METHODS`, name -> method;
- :mod:`~server.unlearning.wash`, :mod:`~server.unlearning.laf`, :mod:`~server.unlearning.federaser`,
  :mod:`~server.unlearning.baselines`: the methods' message flows;
- :mod:`~server.unlearning.rollcall`, :mod:`~server.unlearning.flow`, :mod:`~server.unlearning.evaluation`,
  :mod:`~server.unlearning.results`: roll call and fallback, the flow, the figures, the files.

The clients' side of every message is :mod:`client.unlearning`.
"""

from server.unlearning.base import MethodResult, UnlearningJob, UnlearningMethod
from server.unlearning.federaser import history_recorder
from server.unlearning.flow import Forgetting, forget, unlearn_federation
from server.unlearning.registry import METHODS, RETRAIN, unlearning_method
from server.unlearning.results import UnlearningResult

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
