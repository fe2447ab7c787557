"""What every weight-averaging strategy of Stamen shares, and FedAvg's weighted average as a strategy
(:mod:`stamen.server.averaging`), which several algorithms' server parts use as it is."""

from __future__ import annotations

from typing import Any

from flwr.app import MetricRecord, RecordDict
from flwr.serverapp.strategy import Strategy

from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.server.averaging import WeightedAverage


def no_metrics(records: list[RecordDict], weighting_key: str) -> MetricRecord:
    """The strategy's metric aggregate, left empty: the round loop pools the replies' figures
    itself (:mod:`stamen.server.rows`), where Flower's default averages every metric of every reply."""
    return MetricRecord()


def strategy_options(config: RunConfig) -> dict[str, Any]:
    """What every weight-averaging strategy of Stamen shares: sampling, minimum clients, the
    record keys and FedAvg weight (training nodes) of :mod:`stamen.contract.protocol`, and no metric
    averaging (:func:`no_metrics`)."""
    return {
        "train_metrics_aggr_fn": no_metrics,
        "fraction_train": config.fraction_train,
        "min_train_nodes": config.min_clients,
        "min_evaluate_nodes": config.min_clients,
        "min_available_nodes": config.min_clients,
        "weighted_by_key": p.NUM_EXAMPLES,
        "arrayrecord_key": p.ARRAYS,
        "configrecord_key": p.CONFIG,
    }


def weighted_average(config: RunConfig) -> Strategy:
    """Flower's FedAvg over :func:`strategy_options`, weighted by each client's training nodes."""
    return WeightedAverage(**strategy_options(config))
