r"""The server part of FedPer and FedRep: FedAvg over the encoder, the only part clients send.

Clients reply with their encoder's weights only (:mod:`stamen.algorithms.fedper.client`,
:mod:`stamen.algorithms.fedper.fedrep`);
Flower's FedAvg averages them by training nodes, :math:`\bar\phi = \sum_k n_k \phi_k / \sum_k n_k`,
and sends the average back. The heads never reach the server. The run's final weights
(``model.pt``) are therefore the averaged encoder alone.

A model without encoder weights has nothing to share: ``model='sgc'`` (its encoder is the
parameter-free propagation) and ``model='mlp'`` with ``num-layers=1`` (the head is the whole
model) are refused before the first round.
"""

from __future__ import annotations

from flwr.serverapp.strategy import Strategy

from stamen.contract.run_config import RunConfig
from stamen.models.names import encoder_has_weights
from stamen.server.strategy_options import weighted_average


def encoder_is_empty(config: RunConfig) -> bool:
    """Whether the run's model has no encoder weights (the run config refuses it before training)."""
    return not encoder_has_weights(config.model, config.num_layers)


def make_strategy(config: RunConfig) -> Strategy:
    if encoder_is_empty(config):
        raise ValueError(
            f"algorithm={config.algorithm!r} shares the encoder, and model={config.model!r} with "
            f"num-layers={config.num_layers} has no encoder weights; choose a model with a trained encoder "
            "(gcn, sage, gat, appnp, or mlp with num-layers >= 2)"
        )
    return weighted_average(config)
