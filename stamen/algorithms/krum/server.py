r"""Krum, Multi-Krum and Bulyan: Flower's distance-based Byzantine-robust aggregators.

Krum and Multi-Krum (Blanchard, El Mhamdi, Guerraoui, Stainer; "Machine Learning with
Adversaries: Byzantine Tolerant Gradient Descent", NeurIPS 2017): of :math:`n` replies,
up to :math:`f` = ``num-malicious-nodes`` arbitrary, each reply :math:`w^{(i)}` scores

.. math::

    s(i) = \sum_{j \in N_i} \lVert w^{(i)} - w^{(j)} \rVert_2^2,

:math:`N_i` the :math:`n - f - 2` replies closest to :math:`w^{(i)}` (at least one).
Krum returns the reply of least score; Multi-Krum averages the :math:`m` =
``num-nodes-to-select`` replies of least score, weighted by training nodes as FedAvg.
Krum's guarantee needs :math:`n \ge 2f + 3`.

Bulyan (El Mhamdi, Guerraoui, Rouault; "The Hidden Vulnerability of Distributed
Learning in Byzantium", ICML 2018) selects :math:`\theta = n - 2f` replies with Krum's
scores, then per coordinate averages the :math:`\beta = \theta - 2f` selected values
closest to their median; it needs :math:`n \ge 4f + 3`. Flower selects the
:math:`\theta` replies of least score in one pass (the paper runs Krum :math:`\theta`
times, removing each choice); Stamen keeps Flower's rule.

As every client receives the same global weights, distances between weights are
distances between updates, so Stamen's round 1 (no weights sent) needs nothing more.

Flower 1.42's defaults and Stamen's: ``num_malicious_nodes`` 0 (Flower), 1 (Stamen):
with :math:`f = 0` Bulyan selects every reply and averages all of them, i.e. it is a
plain unweighted mean, and Krum's neighbourhood counts the attacker. MultiKrum's
``num_nodes_to_select`` 1 (Flower, which is Krum), 0 (Stamen) meaning :math:`n - f`, the
choice of Blanchard et al.'s experiments. A round with too few replies for the rule
(:math:`n < 2f + 3`, or :math:`4f + 3` for Bulyan; or :math:`m > n`) stops with one line
naming the keys, where Flower would log a warning and aggregate nothing. The rules are
stateless between rounds (resumable). Client-level DP is not admitted: its noise is
calibrated to a mean over all replies, not to a selection.
"""

from __future__ import annotations

from collections.abc import Iterable

from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Bulyan, MultiKrum, Strategy

from stamen.contract.algorithms import ALGORITHMS, AlgorithmSpec
from stamen.contract.run_config import RunConfig
from stamen.server.algorithms import require_replies
from stamen.server.strategy_options import strategy_options


class ReplyCount:
    """Mixin before a Flower Krum-family strategy: refuse a round with too few replies for the rule.

    Attributes:
        spec: the algorithm's registry entry: its name and ``least_clients``, the replies the
            rule needs as a multiple of ``f`` plus a constant.
    """

    spec: AlgorithmSpec
    num_malicious_nodes: int

    def check_count(self, count: int, what: str) -> None:
        require_replies(self.spec, self.num_malicious_nodes, count, what)

    def configure_train(
        self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid
    ) -> Iterable[Message]:
        messages = list(super().configure_train(server_round, arrays, config, grid))  # type: ignore[misc]
        self.check_count(len(messages), "sampled")
        return messages

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        replies = list(replies)
        self.check_count(len(replies), "got replies from")
        return super().aggregate_train(server_round, replies)  # type: ignore[misc]


class StamenMultiKrum(ReplyCount, MultiKrum):
    """Flower's MultiKrum (Krum when selecting one); ``select_all_but_f``: select :math:`n - f`.

    Args:
        select_all_but_f: choose :math:`m = n - f` of each round's :math:`n` replies.
        **multikrum: Flower MultiKrum's arguments.
    """

    def __init__(self, select_all_but_f: bool = False, **multikrum) -> None:
        super().__init__(**multikrum)
        self.select_all_but_f = select_all_but_f

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        replies = list(replies)
        if self.select_all_but_f:
            self.num_nodes_to_select = len(replies) - self.num_malicious_nodes
        elif self.num_nodes_to_select > len(replies):
            raise ValueError(
                f"multikrum selects num-nodes-to-select={self.num_nodes_to_select} of {len(replies)} replies; "
                "lower num-nodes-to-select (0: all but num-malicious-nodes)"
            )
        return super().aggregate_train(server_round, replies)


class StamenBulyan(ReplyCount, Bulyan):
    """Flower's Bulyan, refusing a round of fewer than :math:`4f + 3` replies."""


def _options(config: RunConfig) -> dict:
    return {"num_malicious_nodes": config.option("num-malicious-nodes"), **strategy_options(config)}


def _with_spec(strategy: ReplyCount, config: RunConfig) -> Strategy:
    strategy.spec = ALGORITHMS[config.algorithm]
    return strategy  # type: ignore[return-value]


def make_krum(config: RunConfig) -> Strategy:
    """Krum (``krum``): Multi-Krum selecting one reply."""
    return _with_spec(StamenMultiKrum(num_nodes_to_select=1, **_options(config)), config)


def make_multikrum(config: RunConfig) -> Strategy:
    """Multi-Krum (``multikrum``) selecting ``num-nodes-to-select`` replies (0: all but ``f``)."""
    select = config.option("num-nodes-to-select")
    strategy = StamenMultiKrum(select_all_but_f=select == 0, num_nodes_to_select=max(select, 1), **_options(config))
    return _with_spec(strategy, config)


def make_bulyan(config: RunConfig) -> Strategy:
    """Bulyan (``bulyan``)."""
    return _with_spec(StamenBulyan(**_options(config)), config)
