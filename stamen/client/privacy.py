r"""DP-SGD on a client's decoupled model, its privacy spent composed over rounds (Opacus's RDP accountant).

Per-sample gradients cannot follow a sample through message passing. A *decoupled*
classifier avoids it: the features are propagated once on the client's own subgraph,
parameter-free,

.. math::

    \tilde{\mathbf{X}} = \mathbf{P}\mathbf{X},\qquad
    \mathbf{P} = \hat{\mathbf{A}}^{K} \text{ (SGC, } K = \texttt{num-layers)},\quad
    \mathbf{P} = \mathbf{I} \text{ (MLP)},

and the trainable part :math:`f_\theta` acts on each row alone, so node :math:`i`'s
logits are :math:`f_\theta(\tilde{\mathbf{x}}_i)` and a training sample is the pair
:math:`(\tilde{\mathbf{x}}_i, y_i)`. DP-SGD (Abadi et al., 2016) then draws each
batch by Poisson sampling with rate :math:`q`, clips every per-sample gradient to
norm :math:`C` (``max-grad-norm``), sums, adds :math:`\mathcal{N}(0, \sigma^2 C^2 \mathbf{I})`
(:math:`\sigma` = ``noise-multiplier``) and averages. The per-node network is a stack of
linear layers, whose per-sample gradients :mod:`stamen.models.dp_sgd` computes in closed form;
the steps are Opacus's (:mod:`stamen.models.dp_sgd_opacus`, held equal by the tests), several
times cheaper than its per-sample-gradient hooks. Each step is a subsampled
Gaussian mechanism; the RDP accountant composes all steps the client ever took
(its history lives in Flower's ``context.state`` between rounds) and converts to
:math:`(\varepsilon, \delta)` at ``target-delta``.

Neighbouring datasets differ in one training sample of one client: one node's label
and its propagated row. A node's raw features also enter its neighbours' rows
through :math:`\mathbf{P}`, which this guarantee does not cover (see the README).

Graph classification needs no decoupling: a graph is a record whose loss depends on it alone,
so the graph task runs the same Poisson epochs and accountant (:func:`private_epochs`) over a client's
training graphs, each graph's gradient taken whole (:mod:`stamen.tasks.graph_classification.dp_sgd`); the
guarantee is then for one whole training graph.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch
from flwr.app import ConfigRecord, RecordDict
from torch import Tensor, nn
from torch_geometric.data import Data

from stamen.client.job import LocalJob
from stamen.client.tasks import client_task
from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.models import NodeClassifier
from stamen.models.dp_sgd import DpSgdSettings, LinearTape, expected_batch_size, poisson_epoch, private_step
from stamen.models.names import check_decoupled
from stamen.models.opacus_quiet import opacus_quietly

if TYPE_CHECKING:  # Opacus loads on first use: a run without DP-SGD never imports it (1-2 s per process)
    from opacus.accountants import RDPAccountant

ACCOUNTANT_STATE = "dp-sgd-accountant"  # ConfigRecord in context.state: the RDP history


class RowClassifier(nn.Module):
    """The per-node part of a decoupled :class:`NodeClassifier`, applied to propagated rows.

    It holds the classifier itself, so training it trains the classifier's own
    parameters; ``classifier(x, edges)`` in eval mode equals ``self(propagated_rows(classifier, data))``.
    """

    def __init__(self, classifier: NodeClassifier) -> None:
        super().__init__()
        self.classifier = classifier

    def forward(self, rows: Tensor) -> Tensor:
        no_edges = torch.empty((2, 0), dtype=torch.long, device=rows.device)  # the per-node layers read no edges
        return self.classifier.head(self.classifier.encoder.transform(rows, no_edges))


@torch.no_grad()
def propagated_rows(model: NodeClassifier, data: Data) -> Tensor:
    r""":math:`\mathbf{P}\mathbf{X}` on the client's subgraph: the encoder's parameter-free final aggregation."""
    final = model.encoder.final
    return data.x if final is None else final(data.x, data.edge_index)


def sample_rate(num_samples: int, batch_size: int, examples: str = "nodes") -> float:
    """Opacus's Poisson rate for an expected batch of ``batch_size``: one over the steps per epoch (``examples``:
    what the samples are, for the refusal)."""
    if batch_size > num_samples:
        raise ValueError(
            f"dp-batch-size={batch_size} is larger than this client's {num_samples} training {examples}; "
            f"lower dp-batch-size to at most {num_samples}"
        )
    return 1.0 / math.ceil(num_samples / batch_size)


def noise_multiplier(config: RunConfig, num_samples: int) -> float:
    """``noise-multiplier``, or the one that spends exactly ``target-epsilon`` over the whole run.

    The run's steps are ``num-server-rounds x local-epochs x steps per epoch``: a client
    that is not sampled every round ends below its target.
    """
    if config.target_epsilon <= 0:
        return config.noise_multiplier
    rate = sample_rate(num_samples, config.dp_batch_size)
    steps = config.num_server_rounds * config.local_epochs * round(1 / rate)
    return solved_noise_multiplier(config.target_epsilon, config.target_delta, rate, steps)


@functools.lru_cache(maxsize=256)
def solved_noise_multiplier(target_epsilon: float, delta: float, rate: float, steps: int) -> float:
    """Opacus's search for the noise multiplier (pure, and slow enough to remember per process).

    A target below the accountant's floor (the epsilon of infinite noise: the RDP accountant's
    conversion alone, at its largest order) is refused at once: Opacus would double the noise
    up to a million before saying so, a minute of a bad run config's pre-run check.
    """
    with opacus_quietly():
        # on use: opacus stays out of this module's import
        from opacus.accountants import RDPAccountant
        from opacus.accountants.analysis.rdp import get_privacy_spent

        orders = RDPAccountant.DEFAULT_ALPHAS
        floor, _ = get_privacy_spent(orders=orders, rdp=np.zeros(len(orders)), delta=delta)
    if target_epsilon <= floor:
        raise ValueError(
            f"target-epsilon={target_epsilon} cannot be reached with delta={delta}: the RDP accountant spends at "
            f"least {float(floor):.3f} even with unbounded noise; raise target-epsilon above it (or delta)"
        )
    try:
        with opacus_quietly():
            # on use: opacus stays out of this module's import
            from opacus.accountants.utils import get_noise_multiplier
        return get_noise_multiplier(target_epsilon=target_epsilon, target_delta=delta, sample_rate=rate, steps=steps)
    except ValueError as error:
        raise ValueError(
            f"target-epsilon={target_epsilon} cannot be reached with {steps} steps at sampling rate "
            f"{rate:.4f} and delta={delta}: {error}"
        ) from error


def load_accountant(state: RecordDict) -> RDPAccountant:
    """The client's RDP accountant with every step of earlier rounds (empty on its first round)."""
    with opacus_quietly():
        # on use: opacus stays out of this module's import
        from opacus.accountants import RDPAccountant
    accountant = RDPAccountant()
    if ACCOUNTANT_STATE in state:
        record = state[ACCOUNTANT_STATE]
        accountant.history = [
            (float(z), float(q), int(n))
            for z, q, n in zip(record["noise-multipliers"], record["sample-rates"], record["steps"], strict=True)
        ]
    return accountant


@functools.lru_cache(maxsize=256)
def rdp_per_step(noise_multiplier: float, rate: float) -> np.ndarray:
    """The RDP of one subsampled Gaussian step at each of the accountant's orders (read-only, remembered per process).

    Opacus's accountant recomputes it on every ``get_epsilon`` (a few hundred ms,
    more than a client's whole round of steps); it depends on ``(sigma, q)`` alone.
    """
    with opacus_quietly():
        # on use: opacus stays out of this module's import
        from opacus.accountants import RDPAccountant
        from opacus.accountants.analysis import rdp as analysis
    curve = analysis.compute_rdp(
        q=rate, noise_multiplier=noise_multiplier, steps=1, orders=RDPAccountant.DEFAULT_ALPHAS
    )
    curve.setflags(write=False)
    return curve


def spent_epsilon(accountant: RDPAccountant, delta: float) -> float:
    """``accountant.get_epsilon(delta)``, the same number, from the remembered per-step curves.

    Opacus sums ``compute_rdp(q, sigma, n) = n * (one step's curve)`` over the history
    and converts at its default orders; this does the same sums in the same order.
    """
    if not accountant.history:
        return 0.0
    with opacus_quietly():
        # on use: opacus stays out of this module's import
        from opacus.accountants.analysis import rdp as analysis
    rdp = sum([rdp_per_step(z, q) * n for z, q, n in accountant.history])
    epsilon, _ = analysis.get_privacy_spent(orders=accountant.DEFAULT_ALPHAS, rdp=rdp, delta=delta)
    return float(epsilon)


def save_accountant(state: RecordDict, accountant: RDPAccountant) -> None:
    z, q, n = zip(*accountant.history) if accountant.history else ((), (), ())
    state[ACCOUNTANT_STATE] = ConfigRecord(
        {
            "noise-multipliers": [float(v) for v in z],
            "sample-rates": [float(v) for v in q],
            "steps": [int(v) for v in n],
        }
    )


@dataclass(frozen=True)
class PrivateTraining:
    """What a DP-SGD round reports: the mean batch loss and the privacy spent so far."""

    loss: float
    epsilon: float
    noise_multiplier: float
    steps: int


def train_private(
    model: NodeClassifier,
    data: Data,
    config: RunConfig,
    optimizer: torch.optim.Optimizer,
    accountant: RDPAccountant,
    generator: torch.Generator,
) -> PrivateTraining:
    """``local-epochs`` epochs of DP-SGD on the training nodes' propagated rows.

    ``optimizer`` is over ``model``'s parameters; ``accountant`` gains this round's
    steps. Batches are Poisson samples drawn from ``generator``, the noise from torch's
    global generator (the ClientApp seeds both); per-sample gradients are computed in
    closed form (:mod:`stamen.models.dp_sgd`), the same steps Opacus takes
    (:mod:`stamen.models.dp_sgd_opacus`, held equal by the tests). On return ``model`` is a
    plain :class:`NodeClassifier` (no hooks), so its state dict is the non-private one.
    """
    check_decoupled(config.model)
    rows = propagated_rows(model, data)[data.train_mask]
    labels = data.y[data.train_mask]
    rate = sample_rate(len(labels), config.dp_batch_size)  # refuses a batch larger than the training set
    sigma = noise_multiplier(config, len(labels))
    settings = DpSgdSettings(sigma, config.max_grad_norm, expected_batch_size(len(labels), rate))
    module = RowClassifier(model).train()
    with LinearTape(module) as tape:
        return private_epochs(
            len(labels),
            lambda index: private_step(tape, optimizer, rows[index], labels[index], settings),
            config.local_epochs,
            (rate, settings.noise_multiplier, config.target_delta),
            accountant,
            generator,
        )


def private_epochs(
    records: int,
    step: Callable[[torch.Tensor], float | None],
    epochs: int,
    sampling: tuple[float, float, float],
    accountant: RDPAccountant,
    generator: torch.Generator,
) -> PrivateTraining:
    """``epochs`` epochs of Poisson batches over ``records`` records, each batch one ``step`` (its loss,
    ``None`` for an empty batch) and one accountant step; ``sampling`` is (sample rate, noise multiplier,
    target delta). An empty batch is a step too."""
    rate, sigma, delta = sampling
    losses, steps = [], 0
    for _ in range(epochs):
        for index in poisson_epoch(records, rate, generator):
            loss = step(index)
            accountant.step(noise_multiplier=sigma, sample_rate=rate)
            steps += 1
            if loss is not None:
                losses.append(loss)
    return PrivateTraining(
        loss=sum(losses) / max(len(losses), 1),
        epsilon=spent_epsilon(accountant, delta),
        noise_multiplier=sigma,
        steps=steps,
    )


def train_round(model: torch.nn.Module, job: LocalJob, server_round: int) -> tuple[float, dict[str, float]]:
    """One round of DP-SGD for a client: its accountant and Adam state resume from ``job.state``. The run's
    task says what a record is: a node (the decoupled model's rows) or a graph (its task part's graphs)."""
    accountant = load_accountant(job.state)
    optimizer = job.optimizer(model)
    generator = torch.Generator().manual_seed(job.config.seed * 1_000_003 + server_round * 1_009 + job.partition_id)
    result = client_task(job.config.task).train_private(model, job, optimizer, accountant, generator)
    job.keep_optimizer(optimizer)
    save_accountant(job.state, accountant)
    return result.loss, {
        p.EPSILON: result.epsilon,
        p.NOISE_MULTIPLIER: result.noise_multiplier,
        p.DP_STEPS: result.steps,
    }
