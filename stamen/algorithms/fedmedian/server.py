r"""FedMedian and FedTrimmedAvg: Flower's coordinate-wise robust aggregators (Yin et al., ICML 2018).

Byzantine-Robust Distributed Learning: Towards Optimal Statistical Rates (Yin, Chen,
Ramchandran, Bartlett; ICML 2018) replaces the mean of the :math:`n` clients' weights
:math:`w^{(1)}, \dots, w^{(n)}` by a statistic that a minority of arbitrary values cannot
drag far, taken per coordinate :math:`j`:

.. math::

    \text{fedmedian:}\quad w_j &= \operatorname{median}\big(w^{(1)}_j, \dots, w^{(n)}_j\big) \\
    \text{fedtrimmedavg:}\quad w_j &= \frac{1}{n - 2b} \sum_{i=b+1}^{n-b} w^{(\pi_j(i))}_j,
    \qquad b = \lfloor \beta n \rfloor,

where :math:`\pi_j` sorts the clients' values of coordinate :math:`j` (so the :math:`b`
largest and :math:`b` smallest are dropped) and :math:`\beta` = ``trimmed-beta``. The
clients' sizes do not weight either statistic (the training-node weights still average
the reported metrics). As the global weights sent are the same for every client, the
statistic of the weights is the global model plus the statistic of the updates, so
Stamen's round 1, which sends no weights, needs nothing more.

Flower 1.42's ``FedTrimmedAvg`` default :math:`\beta = 0.2` is Stamen's as well; note
that :math:`b` rounds down, so with fewer than :math:`1/\beta` clients nothing is
trimmed (with 5 clients and :math:`\beta = 0.2`, one client is dropped at each end).
Both are stateless between rounds (resumable). Client-level DP is not admitted: its
noise is calibrated to the mean's sensitivity :math:`C/m`, not a median's.
"""

from __future__ import annotations

from flwr.serverapp.strategy import FedMedian, FedTrimmedAvg, Strategy

from stamen.contract.run_config import RunConfig
from stamen.server.strategy_options import strategy_options


def make_median(config: RunConfig) -> Strategy:
    """Flower's FedMedian (``fedmedian``)."""
    return FedMedian(**strategy_options(config))


def make_trimmed_mean(config: RunConfig) -> Strategy:
    """Flower's FedTrimmedAvg with ``trimmed-beta`` (``fedtrimmedavg``)."""
    return FedTrimmedAvg(beta=config.option("trimmed-beta"), **strategy_options(config))
