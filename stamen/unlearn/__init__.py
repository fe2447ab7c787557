"""Unlearning's math: forget a client, some of its nodes or a class (no Flower here).

- :mod:`stamen.unlearn.requests`: the forget masks and the remaining federation of a request
  (the typed request itself: :mod:`stamen.contract.requests`);
- :mod:`stamen.unlearn.wash`: closed-form head edit (after LaW), with its federated statistics;
- :mod:`stamen.unlearn.laf`: label-agnostic encoder unlearning (after LAF) and ``laf+r``'s head repair;
- :mod:`stamen.unlearn.federaser`: the recorded updates and their replay step (after FedEraser);
- :mod:`stamen.unlearn.baselines`: fine-tuning's budget, gradient ascent;
- :mod:`stamen.unlearn.mia`, :mod:`stamen.unlearn.evaluate`: membership inference and the figures.

The message flows of every method are :mod:`stamen.server.unlearning` and :mod:`stamen.client.unlearning`;
the in-process experiment is :mod:`stamen.experiments.unlearn_experiment`.

Attributes load on first use (PEP 562), so that importing the room (as ``import stamen`` does) pulls in no torch.
"""

import importlib

_SOURCES = {
    "EditStatistics": "stamen.unlearn.wash",
    "ForgetRequest": "stamen.unlearn.requests",
    "ForgetSplit": "stamen.unlearn.requests",
    "client_statistics": "stamen.unlearn.wash",
    "solve_edit": "stamen.unlearn.wash",
    "split_federation": "stamen.unlearn.requests",
}

__all__ = sorted(_SOURCES)


def __getattr__(name: str):
    if name not in _SOURCES:
        raise AttributeError(f"module 'stamen.unlearn' has no attribute {name!r}")
    return getattr(importlib.import_module(_SOURCES[name]), name)
