"""Unlearning: forget a client, some of its nodes or a class, and compare with retraining.

- :mod:`unlearn.requests`: requests (``client:i``, ``nodes:i:FRACTION``, ``class:c``) and the split they make;
- :mod:`unlearn.wash`: closed-form head edit (after LaW), with its federated statistics;
- :mod:`unlearn.laf`: label-agnostic encoder unlearning (after LAF), ``laf+r`` head repair, ``laf+ft``;
- :mod:`unlearn.federaser`: replay of the clients' recorded updates without the forgotten data (after FedEraser);
- :mod:`unlearn.baselines`: retraining from scratch, fine-tuning, gradient ascent;
- :mod:`unlearn.mia`, :mod:`unlearn.evaluate`: membership inference and the figures;
- :mod:`unlearn.harness`: :func:`run_request`, the in-process entry point.
"""

from unlearn.harness import METHODS, run_request
from unlearn.requests import ForgetSplit, Request, parse_request, split_federation
from unlearn.wash import EditStatistics, client_statistics, solve_edit

__all__ = [
    "METHODS",
    "EditStatistics",
    "ForgetSplit",
    "Request",
    "client_statistics",
    "parse_request",
    "run_request",
    "solve_edit",
    "split_federation",
]
