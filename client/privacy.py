r"""DP-SGD on a client's decoupled model (Opacus), its privacy spent composed over rounds.

Opacus computes per-sample gradients layer by layer and cannot follow a sample
through message passing. A *decoupled* classifier avoids it: the features are
propagated once on the client's own subgraph, parameter-free,

.. math::

    \tilde{\mathbf{X}} = \mathbf{P}\mathbf{X},\qquad
    \mathbf{P} = \hat{\mathbf{A}}^{K} \text{ (SGC, } K = \texttt{num-layers)},\quad
    \mathbf{P} = \mathbf{I} \text{ (MLP)},

and the trainable part :math:`f_\theta` acts on each row alone, so node :math:`i`'s
logits are :math:`f_\theta(\tilde{\mathbf{x}}_i)` and a training sample is the pair
:math:`(\tilde{\mathbf{x}}_i, y_i)`. DP-SGD (Abadi et al., 2016) then draws each
batch by Poisson sampling with rate :math:`q`, clips every per-sample gradient to
norm :math:`C` (``max-grad-norm``), sums, adds :math:`\mathcal{N}(0, \sigma^2 C^2 \mathbf{I})`
(:math:`\sigma` = ``noise-multiplier``) and averages. Each step is a subsampled
Gaussian mechanism; the RDP accountant composes all steps the client ever took
(its history lives in Flower's ``context.state`` between rounds) and converts to
:math:`(\varepsilon, \delta)` at ``target-delta``.

Neighbouring datasets differ in one training sample of one client: one node's label
and its propagated row. A node's raw features also enter its neighbours' rows
through :math:`\mathbf{P}`, which this guarantee does not cover (see the README).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from flwr.app import ConfigRecord, Context, Message, RecordDict
from flwr.clientapp.mod import adaptiveclipping_mod, fixedclipping_mod
from flwr.clientapp.typing import ClientAppCallable
from torch import Tensor, nn
from torch.utils.data import DataLoader, TensorDataset
from torch_geometric.data import Data

from client.job import LocalJob
from models import NodeClassifier
from contract import protocol as p
from models.names import check_decoupled
from contract.run_config import RunConfig

from models.opacus_quiet import opacus_quietly

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


def sample_rate(num_samples: int, batch_size: int) -> float:
    """Opacus's Poisson rate for an expected batch of ``batch_size``: one over the steps per epoch."""
    if batch_size > num_samples:
        raise ValueError(
            f"dp-batch-size={batch_size} is larger than this client's {num_samples} training nodes; "
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
    """Opacus's search for the noise multiplier (pure, and slow enough to remember per process)."""
    try:
        with opacus_quietly():
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
        from opacus.accountants import RDPAccountant
    accountant = RDPAccountant()
    if ACCOUNTANT_STATE in state:
        record = state[ACCOUNTANT_STATE]
        accountant.history = [
            (float(z), float(q), int(n))
            for z, q, n in zip(record["noise-multipliers"], record["sample-rates"], record["steps"], strict=True)
        ]
    return accountant


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
    steps. On return ``model`` is a plain :class:`NodeClassifier` again (no Opacus
    hooks, no per-sample gradients), so its state dict is the non-private one.
    """
    check_decoupled(config.model)
    rows = propagated_rows(model, data)[data.train_mask]
    labels = data.y[data.train_mask]
    sample_rate(len(labels), config.dp_batch_size)  # refuses a batch larger than the training set
    sigma = noise_multiplier(config, len(labels))
    with opacus_quietly():
        from opacus import PrivacyEngine
    engine = PrivacyEngine(accountant="rdp")
    engine.accountant = accountant
    loader = DataLoader(TensorDataset(rows, labels), batch_size=config.dp_batch_size, generator=generator)
    module, private_optimizer, private_loader = engine.make_private(
        module=RowClassifier(model),
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=sigma,
        max_grad_norm=config.max_grad_norm,
        poisson_sampling=True,
    )
    module.train()
    losses, steps = [], 0
    for _ in range(config.local_epochs):
        for batch_rows, batch_labels in private_loader:
            private_optimizer.zero_grad()
            logits = module(batch_rows)
            loss = nn.functional.cross_entropy(logits, batch_labels)
            loss.backward()
            private_optimizer.step()  # an empty Poisson batch still steps: noise only, and it is accounted
            steps += 1
            if len(batch_labels) > 0:
                losses.append(float(loss.detach()))
    module.to_standard_module()  # removes the hooks and the per-sample gradients
    return PrivateTraining(
        loss=sum(losses) / max(len(losses), 1),
        epsilon=accountant.get_epsilon(config.target_delta),
        noise_multiplier=sigma,
        steps=steps,
    )


def train_round(model: NodeClassifier, job: LocalJob, server_round: int) -> tuple[float, dict[str, float]]:
    """One round of DP-SGD for a client: its accountant and Adam state resume from ``job.state``."""
    accountant = load_accountant(job.state)
    optimizer = job.optimizer(model)
    generator = torch.Generator().manual_seed(job.config.seed * 1_000_003 + server_round * 1_009 + job.partition_id)
    result = train_private(model, job.data, job.config, optimizer, accountant, generator)
    job.keep_optimizer(optimizer)
    save_accountant(job.state, accountant)
    return result.loss, {
        p.EPSILON: result.epsilon,
        p.NOISE_MULTIPLIER: result.noise_multiplier,
        p.DP_STEPS: result.steps,
    }


def client_dp_mod(message: Message, context: Context, call_next: ClientAppCallable) -> Message:
    """Flower's client-side clipping mods, for the runs whose ``clipping`` asks for them."""
    config = context.run_config
    if config.get("privacy") == "client-dp" and config.get("clipping") == "client-fixed":
        return fixedclipping_mod(message, context, call_next)
    if config.get("privacy") == "client-dp" and config.get("clipping") == "client-adaptive":
        return adaptiveclipping_mod(message, context, call_next)
    return call_next(message, context)
