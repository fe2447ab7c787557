r"""``laf``: label-agnostic forgetting of the encoder (after LAF, ICLR 2024).

No label is read: only the graphs, the training mask and the forget mask.

1. **Two VAEs on embeddings.** With the original encoder :math:`f_0`, embed the
   remaining training nodes :math:`D_r` and the forgotten ones :math:`D_f`, and fit a small
   VAE on each (MLP encoder to :math:`\mu, \log\sigma^2`, *linear* decoder, loss
   :math:`\lVert \mathbf{h} - \hat{\mathbf{h}}\rVert^2 + \beta\,\mathrm{KL}`): :math:`V_r` and :math:`V_f`.
2. **Alternate**, on the encoder :math:`f` (the head is frozen):

   (a) *extractor unlearning*: with the normalised reconstruction error
   :math:`e_V(\mathbf{h}) = \lVert \mathbf{h} - V(\mathbf{h}) \rVert^2 / s` (:math:`s` the mean squared
   norm of the original embeddings, :math:`V(\mathbf{h})` decoded from :math:`\mu`),

   .. math::
       \mathcal{L}_{UE} = \operatorname{mean}_{D_r} \exp\!\Big(\frac{e_{V_r}}{e_{V_r}+1}\Big)
                        - \operatorname{mean}_{D_f} \exp\!\Big(\frac{e_{V_f}}{e_{V_f}+1}\Big),

   lowering the remaining data's error under :math:`V_r` and raising the forgotten data's
   (under :math:`V_f`, as in LAF's reference code; ``forget_vae="remaining"`` uses :math:`V_r`
   for both terms). Each term lies in :math:`[1, e)`, so :math:`\mathcal{L}_{UE} \in (1-e,\, e-1)`.

   (b) *representation alignment*: with cosine distances to the original embeddings
   :math:`d_i = 1 - \cos(f(x_i), f_0(x_i)) \in [0, 2]`,

   .. math::
       \mathcal{L}_{RA} = \operatorname{mean}_{i \in D_r} d_i
                        - \tau \log \operatorname{mean}_{j \in D_f} \exp(d_j / \tau) \in [-2, 2],

   keeping remaining embeddings close to the original model's and pushing forgotten
   ones away (a contrastive loss at temperature :math:`\tau`; LAF's sum-over-negatives
   form, rescaled by :math:`\tau` so its range does not depend on :math:`\tau`).

3. ``laf+r`` (:func:`repair_head`): a few epochs of supervised training of the head on
   the labelled remaining data (this step does use labels).
4. ``laf+ft``: LAF, then the ``finetune`` baseline from LAF's weights (FedAvg on the
   remaining federation for a tenth of the training rounds, every layer, with labels).
   LAF removes what the model holds of :math:`D_f` and costs much of its accuracy;
   fine-tuning restores what the remaining data supports, not the memorised :math:`D_f`.
   (Fine-tuning the original model instead keeps part of that memory.)
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch_geometric.data import Data

from stamen.models import NodeClassifier


class EmbeddingVAE(nn.Module):
    """A small VAE on embeddings: MLP encoder to ``(mu, logvar)``, linear decoder."""

    def __init__(self, dim: int, latent: int = 16, hidden: int = 64) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU())
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.decoder = nn.Linear(latent, dim)

    def forward(self, h: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        hidden = self.encoder(h)
        mu, logvar = self.mu(hidden), self.logvar(hidden).clamp(-10, 10)
        z = mu + torch.randn_like(mu) * (0.5 * logvar).exp() if self.training else mu
        return self.decoder(z), mu, logvar

    def reconstruction_error(self, h: Tensor) -> Tensor:
        """Per-row squared error of the reconstruction from ``mu`` (deterministic)."""
        hidden = self.encoder(h)
        return (self.decoder(self.mu(hidden)) - h).pow(2).sum(1)


def vae_loss(recon: Tensor, h: Tensor, mu: Tensor, logvar: Tensor, beta: float) -> Tensor:
    r"""Mean over rows of :math:`\lVert \mathbf{h} - \hat{\mathbf{h}} \rVert^2
    + \beta\,\mathrm{KL}(q(z|h)\,\Vert\,\mathcal{N}(0, I))`."""
    kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1)
    return ((recon - h).pow(2).sum(1) + beta * kl).mean()


def train_vae(embeddings: Tensor, latent: int, hidden: int, epochs: int, lr: float, beta: float) -> EmbeddingVAE:
    """Fit an :class:`EmbeddingVAE` full-batch on fixed embeddings (seed the caller's RNG first)."""
    vae = EmbeddingVAE(embeddings.size(1), latent, hidden)
    optimizer = torch.optim.Adam(vae.parameters(), lr=lr)
    embeddings = embeddings.detach()
    vae.train()
    for _ in range(epochs):
        optimizer.zero_grad()
        recon, mu, logvar = vae(embeddings)
        vae_loss(recon, embeddings, mu, logvar, beta).backward()
        optimizer.step()
    vae.eval()
    for parameter in vae.parameters():
        parameter.requires_grad_(False)
    return vae


def bounded(error: Tensor) -> Tensor:
    r""":math:`\exp(e / (e + 1)) \in [1, e)` for :math:`e \ge 0`."""
    return torch.exp(error / (error + 1))


def _mean(values: Tensor) -> Tensor:
    """The mean, and 0 over an empty set: a client of a federation may hold only one side."""
    return values.mean() if values.numel() else values.sum()


def extractor_loss(error_remaining: Tensor, error_forget: Tensor) -> Tensor:
    r""":math:`\mathcal{L}_{UE} = \operatorname{mean}\,\exp(\frac{e_r}{e_r+1})
    - \operatorname{mean}\,\exp(\frac{e_f}{e_f+1}) \in (1-e, e-1)` (a term over an empty set is 0)."""
    return _mean(bounded(error_remaining)) - _mean(bounded(error_forget))


def alignment_loss(remaining: Tensor, remaining_0: Tensor, forget: Tensor, forget_0: Tensor, tau: float) -> Tensor:
    r""":math:`\mathcal{L}_{RA} = \operatorname{mean}_r d - \tau\log\operatorname{mean}_f e^{d/\tau} \in [-2, 2]`
    (a term over an empty set is 0)."""
    d_r = 1 - nn.functional.cosine_similarity(remaining, remaining_0, dim=1)
    d_f = 1 - nn.functional.cosine_similarity(forget, forget_0, dim=1)
    if d_f.numel() == 0:
        return _mean(d_r)
    return _mean(d_r) - tau * (torch.logsumexp(d_f / tau, dim=0) - math.log(d_f.numel()))


@dataclass
class LAFConfig:
    """Options of :func:`laf` (defaults sized for full-batch GNN clients).

    Attributes:
        latent, vae_hidden, vae_epochs, vae_lr, beta: the VAEs.
        steps: alternations of (a) and (b).
        lr_extract, lr_align: Adam learning rates of steps (a) and (b) on the encoder.
        tau: contrastive temperature.
        forget_vae: ``forget`` (LAF's code: the forget term under :math:`V_f`) or ``remaining``.
    """

    latent: int = 16
    vae_hidden: int = 64
    vae_epochs: int = 100
    vae_lr: float = 1e-2
    beta: float = 0.025
    steps: int = 5
    lr_extract: float = 5e-3
    lr_align: float = 5e-3
    tau: float = 1.0
    forget_vae: str = "forget"


@dataclass
class LAFResult:
    """What :func:`laf_traced` gives: the unlearned copy, the losses of every step, the time."""

    model: NodeClassifier
    extractor_loss: list[float]
    alignment_loss: list[float]
    seconds: float
    vaes: tuple[EmbeddingVAE | None, EmbeddingVAE | None] = (None, None)  # (V_r, V_f) as fitted or given


def _embed(model: NodeClassifier, graphs: list[Data]) -> tuple[Tensor, Tensor]:
    """Embeddings of the remaining (``train_mask & ~forget_mask``) and forgotten nodes, over all graphs."""
    remaining, forget = [], []
    for data in graphs:
        h = model.encoder(data.x, data.edge_index)
        remaining.append(h[data.train_mask & ~data.forget_mask])
        forget.append(h[data.forget_mask])
    return torch.cat(remaining), torch.cat(forget)


def laf(
    model: NodeClassifier,
    graphs: list[Data],
    config: LAFConfig | None = None,
    seed: int = 0,
    original: NodeClassifier | None = None,
) -> NodeClassifier:
    """A copy of ``model`` with its encoder unlearned label-agnostically (:func:`laf_traced`)."""
    return laf_traced(model, graphs, config, seed, original).model


def laf_traced(
    model: NodeClassifier,
    graphs: list[Data],
    config: LAFConfig | None = None,
    seed: int = 0,
    original: NodeClassifier | None = None,
    vaes: tuple[EmbeddingVAE | None, EmbeddingVAE | None] | None = None,
) -> LAFResult:
    """A copy of ``model`` with its encoder unlearned label-agnostically (see the module docstring),
    with the loss traces.

    Args:
        model: the model to start from (left unchanged).
        graphs: every client's graph as trained, with ``train_mask`` and ``forget_mask``;
            ``y`` is never read.
        config: hyperparameters.
        seed: seeds the VAEs' initialisation and sampling.
        original: the trained model whose embeddings :math:`f_0` the VAEs and the alignment use
            (default ``model``; a federated round passes the model before the first round).
            One side (remaining or forgotten nodes) may be empty, as on a single client.
        vaes: :math:`(V_r, V_f)` from an earlier call with the same ``original``, ``graphs``,
            ``config`` and ``seed`` (its result's ``vaes``), instead of fitting them again: they
            depend on nothing else, and nothing after them draws random numbers, so the result
            is the same (a federated LAF round reuses its first round's).
    """
    config = config or LAFConfig()
    if config.forget_vae not in ("forget", "remaining"):
        raise ValueError(f"forget_vae must be 'forget' or 'remaining', got {config.forget_vae!r}")
    started = time.perf_counter()
    torch.manual_seed(seed)
    model = copy.deepcopy(model)
    model.eval()  # no dropout: every step is deterministic given the seed
    reference = original if original is not None else model
    reference.eval()
    with torch.no_grad():
        remaining_0, forget_0 = _embed(reference, graphs)
    if forget_0.size(0) == 0 and remaining_0.size(0) == 0:
        raise ValueError("laf needs remaining or forgotten training nodes")
    scale = float(torch.cat([remaining_0, forget_0]).pow(2).sum(1).mean().clamp_min(1e-12))

    def fit(embeddings: Tensor) -> EmbeddingVAE | None:
        if embeddings.size(0) == 0:
            return None
        return train_vae(embeddings, config.latent, config.vae_hidden, config.vae_epochs, config.vae_lr, config.beta)

    vae_r, vae_f = vaes if vaes is not None else (fit(remaining_0), fit(forget_0))
    fitted = (vae_r, vae_f)  # as fitted or given, before the one-sided fallbacks below
    vae_forget_term = vae_f if config.forget_vae == "forget" else vae_r
    # A client holding one side only: the missing VAE would only ever see an empty set.
    vae_forget_term = vae_forget_term if vae_forget_term is not None else (vae_r if vae_r is not None else vae_f)
    vae_r = vae_r if vae_r is not None else vae_forget_term
    for parameter in model.head.parameters():
        parameter.requires_grad_(False)
    encoder_parameters = [p for p in model.encoder.parameters() if p.requires_grad]
    trace_extract, trace_align = [], []
    if encoder_parameters:
        extract = torch.optim.Adam(encoder_parameters, lr=config.lr_extract)
        align = torch.optim.Adam(encoder_parameters, lr=config.lr_align)
        for _ in range(config.steps):
            remaining, forget = _embed(model, graphs)
            loss = extractor_loss(
                vae_r.reconstruction_error(remaining) / scale, vae_forget_term.reconstruction_error(forget) / scale
            )
            extract.zero_grad()
            loss.backward()
            extract.step()
            trace_extract.append(float(loss.detach()))
            remaining, forget = _embed(model, graphs)
            loss = alignment_loss(remaining, remaining_0, forget, forget_0, config.tau)
            align.zero_grad()
            loss.backward()
            align.step()
            trace_align.append(float(loss.detach()))
    for parameter in model.head.parameters():
        parameter.requires_grad_(True)
    model.eval()
    return LAFResult(model, trace_extract, trace_align, time.perf_counter() - started, fitted)


def repair_head(model: NodeClassifier, remaining: list[Data], epochs: int = 5, lr: float = 0.01) -> NodeClassifier:
    """``epochs`` full-batch Adam steps of the head alone on the remaining labelled data (in place)."""
    model.eval()
    with torch.no_grad():
        cached = [(model.encoder(d.x, d.edge_index)[d.train_mask], d.y[d.train_mask]) for d in remaining]
    cached = [(h, y) for h, y in cached if y.numel()]
    count = sum(y.numel() for _, y in cached)
    if count == 0:  # no labelled node left to repair on
        return model
    optimizer = torch.optim.Adam(model.head.parameters(), lr=lr)
    for _ in range(epochs):
        optimizer.zero_grad()
        loss = sum(nn.functional.cross_entropy(model.head(h), y, reduction="sum") for h, y in cached) / count
        loss.backward()
        optimizer.step()
    return model
