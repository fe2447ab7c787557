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

from contract.run_config import RunConfig
from server.fedavg import strategy_options
from server.privacy import sampled_clients


class ReplyCount:
    """Mixin before a Flower Krum-family strategy: refuse a round with too few replies for the rule.

    Attributes:
        algorithm: the run-config name, for the error line.
        needs: how many replies the rule needs, as a multiple of ``f`` plus a constant.
    """

    algorithm: str = "krum"
    needs: tuple[int, int] = (2, 3)
    num_malicious_nodes: int

    def least(self) -> int:
        factor, constant = self.needs
        return factor * self.num_malicious_nodes + constant

    def check_count(self, count: int, what: str) -> None:
        if count < self.least():
            factor, constant = self.needs
            raise ValueError(
                f"{self.algorithm} with num-malicious-nodes={self.num_malicious_nodes} needs at least "
                f"{factor}f+{constant} = {self.least()} clients per round, {what} {count}; "
                "lower num-malicious-nodes or use more clients"
            )

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

    algorithm = "bulyan"
    needs = (4, 3)


def check_federation(config: RunConfig, num_clients: int) -> None:
    """Before a run: the rule of ``config.algorithm`` gets enough replies from ``num_clients`` (one-line ValueError).

    The round's sample is Flower's (:func:`server.privacy.sampled_clients`); a Krum-family
    strategy refuses it in round 1 anyway, this check only says so before anything starts.
    """
    if config.algorithm not in ("krum", "multikrum", "bulyan"):
        return
    strategy = make_strategy(config)
    assert isinstance(strategy, ReplyCount)
    strategy.check_count(sampled_clients(config, num_clients), "sampled")
    select = config.num_nodes_to_select
    if config.algorithm == "multikrum" and select > sampled_clients(config, num_clients):
        raise ValueError(
            f"multikrum selects num-nodes-to-select={select} of {sampled_clients(config, num_clients)} sampled "
            "clients; lower num-nodes-to-select (0: all but num-malicious-nodes)"
        )


def make_strategy(config: RunConfig) -> Strategy:
    """Krum, Multi-Krum or Bulyan, as ``config.algorithm`` names, with ``num-malicious-nodes``."""
    options = {"num_malicious_nodes": config.num_malicious_nodes, **strategy_options(config)}
    if config.algorithm == "bulyan":
        return StamenBulyan(**options)
    if config.algorithm == "krum":
        strategy = StamenMultiKrum(num_nodes_to_select=1, **options)
    else:
        select = config.num_nodes_to_select
        strategy = StamenMultiKrum(select_all_but_f=select == 0, num_nodes_to_select=max(select, 1), **options)
    strategy.algorithm = config.algorithm
    return strategy
