"""Unlearning's math: forget a client, some of its nodes or a class (no Flower here).

- :mod:`unlearn.requests`: the forget masks and the remaining federation of a request
  (the typed request itself: :mod:`contract.requests`);
- :mod:`unlearn.wash`: closed-form head edit (after LaW), with its federated statistics;
- :mod:`unlearn.laf`: label-agnostic encoder unlearning (after LAF) and ``laf+r``'s head repair;
- :mod:`unlearn.federaser`: the recorded updates and their replay step (after FedEraser);
- :mod:`unlearn.baselines`: fine-tuning's budget, gradient ascent;
- :mod:`unlearn.mia`, :mod:`unlearn.evaluate`: membership inference and the figures.

The message flows of every method are :mod:`server.unlearning` and :mod:`client.unlearning`;
the in-process experiment is :mod:`simulations.unlearn_experiment`.
"""

from unlearn.requests import ForgetRequest, ForgetSplit, split_federation
from unlearn.wash import EditStatistics, client_statistics, solve_edit

__all__ = [
    "EditStatistics",
    "ForgetRequest",
    "ForgetSplit",
    "client_statistics",
    "solve_edit",
    "split_federation",
]
