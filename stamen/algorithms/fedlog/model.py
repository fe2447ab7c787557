r"""FedLoG's client model: a GNN encoder and two prototype branches over learnable synthetic nodes.

Kim et al., "Subgraph Federated Learning for Local Generalization", ICLR 2025.

Encoder: GraphSAGE, :math:`\mathbf{h}_i = f_\theta(\mathbf{X}, \mathcal{E})_i \in \mathbb{R}^{d}` (PyG's
``GraphSAGE`` with two layers, as the authors' code builds it;
:class:`~stamen.algorithms.fedlog.sage_encoder.SAGEEncoder`
computes it with the client's sparse features as a sparse product).
Each branch :math:`b \in \{\mathrm{head}, \mathrm{tail}\}` owns learnable synthetic node
features :math:`\mathbf{S}^b \in \mathbb{R}^{C \times P \times F}` (``P`` nodes per class,
fixed labels) and a LayerNorm :math:`\mathrm{LN}_b`. A synthetic node is embedded on
its own (a self-loop as its only edge); the class prototypes are

.. math::
    \mathbf{p}^b_c = \frac{1}{P} \sum_{j=1}^{P} \mathrm{LN}_b\big(f_\theta(\mathbf{S}^b_{c,j})\big),

and a node's branch log-probabilities are
:math:`\log \mathrm{softmax}_c\big(-\lVert \mathrm{LN}_b(\mathbf{h}_i) - \mathbf{p}^b_c \rVert^2\big)`.
The branches are mixed per node by the degree gate
:math:`\alpha_i = \sigma\big(\deg(i) - (\gamma + 1)\big)`: well-connected nodes follow the head
branch, sparsely connected ones the tail branch. The training loss mixes the branch
log-probabilities, :math:`\alpha_i \log p^{\mathrm{head}} + (1 - \alpha_i) \log p^{\mathrm{tail}}`;
a prediction takes the mixed probabilities :math:`\alpha_i p^{\mathrm{head}} + (1 - \alpha_i) p^{\mathrm{tail}}`.

A linear classifier on the embeddings serves the cross-entropy warm-up only.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.utils import degree

from stamen.algorithms.fedlog.sage_encoder import SAGEEncoder

SYNTHETIC_KEYS = ("synthetic_head", "synthetic_tail")  # personal parameters: never averaged


def degree_gate(edge_index: Tensor, num_nodes: int, gamma: float) -> Tensor:
    r""":math:`\alpha_i = \sigma(\deg(i) - (\gamma + 1))`, the head branch's weight for every node."""
    return torch.sigmoid(degree(edge_index[0], num_nodes=num_nodes) - (gamma + 1.0))


def squared_distances(queries: Tensor, prototypes: Tensor) -> Tensor:
    """``(n, C)`` squared Euclidean distances between ``(n, d)`` queries and ``(C, d)`` prototypes."""
    return (queries.unsqueeze(1) - prototypes.unsqueeze(0)).pow(2).sum(-1)


def prototype_log_probs(queries: Tensor, prototypes: Tensor) -> Tensor:
    """Log-probabilities of the classes by negative squared distance to their prototypes."""
    return torch.log_softmax(-squared_distances(queries, prototypes), dim=-1)


class FedLoGNet(nn.Module):
    """Encoder, head/tail LayerNorms, warm-up classifier and the two branches' synthetic nodes.

    Args:
        in_dim: feature width ``F``.
        num_classes: ``C``.
        hidden: the encoder's hidden width.
        embedding: the embedding width ``d``.
        num_proto: synthetic nodes per class ``P``.
        gamma: the degree gate's threshold.
        dropout: the encoder's dropout.
    """

    def __init__(
        self,
        in_dim: int,
        num_classes: int,
        hidden: int = 128,
        embedding: int = 64,
        num_proto: int = 20,
        gamma: float = 3.0,
        dropout: float = 0.5,
    ) -> None:
        super().__init__()
        self.encoder = SAGEEncoder(in_dim, hidden, embedding, dropout)
        self.norm_head = nn.LayerNorm(embedding)
        self.norm_tail = nn.LayerNorm(embedding)
        self.classifier = nn.Linear(embedding, num_classes)
        self.synthetic_head = nn.Parameter(nn.init.xavier_uniform_(torch.empty(num_classes * num_proto, in_dim)))
        self.synthetic_tail = nn.Parameter(nn.init.xavier_uniform_(torch.empty(num_classes * num_proto, in_dim)))
        self.register_buffer("synthetic_labels", torch.arange(num_classes).repeat_interleave(num_proto))
        self.num_classes = num_classes
        self.num_proto = num_proto
        self.gamma = gamma

    def shared_state(self) -> dict[str, Tensor]:
        """What the server averages: every weight except the (personal) synthetic nodes."""
        return {k: v for k, v in self.state_dict().items() if k not in SYNTHETIC_KEYS and k != "synthetic_labels"}

    def embed_isolated(self, x: Tensor) -> Tensor:
        """Embeddings of nodes that have no neighbour but themselves (synthetic nodes)."""
        return self.encoder.isolated(x)

    def prototypes(self) -> tuple[Tensor, Tensor]:
        """``(C, d)`` head and tail prototypes: per-class means of the normalised synthetic embeddings."""
        head = self.norm_head(self.embed_isolated(self.synthetic_head))
        tail = self.norm_tail(self.embed_isolated(self.synthetic_tail))
        shape = (self.num_classes, self.num_proto, -1)
        return head.view(shape).mean(1), tail.view(shape).mean(1)

    def branch_log_probs(self, embeddings: Tensor, prototypes: tuple[Tensor, Tensor]) -> tuple[Tensor, Tensor]:
        """Head and tail branch log-probabilities of ``(n, d)`` embeddings."""
        return (
            prototype_log_probs(self.norm_head(embeddings), prototypes[0]),
            prototype_log_probs(self.norm_tail(embeddings), prototypes[1]),
        )

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        """Log of the degree-gated mixture of the branches' class probabilities, per node."""
        head, tail = self.branch_log_probs(self.encoder(x, edge_index), self.prototypes())
        alpha = degree_gate(edge_index, x.size(0), self.gamma).unsqueeze(1)
        return torch.logaddexp(head + torch.log(alpha), tail + torch.log1p(-alpha))


def scale_features(features: Tensor, labels: Tensor, lam: Tensor) -> Tensor:
    r"""Adaptive feature scaling :math:`\tilde{\mathbf{x}} = \mathbf{x} + \lambda_y (\bar{\mathbf{x}} - \mathbf{x})`.

    ``features`` are the global synthetic nodes, :math:`\bar{\mathbf{x}}` their mean and
    ``lam`` the client's per-class :math:`\lambda \in [0, 1]`: a class the client already
    recognises is pulled towards the mean of all classes, i.e. made harder.
    """
    return features + lam[labels].unsqueeze(1) * (features.mean(0, keepdim=True) - features)


def update_lambda(lam: Tensor, predicted: Tensor, labels: Tensor, step: float, threshold: float) -> Tensor:
    r"""Raise :math:`\lambda_c` by ``step`` where the client classifies class ``c``'s synthetic nodes
    with accuracy above ``threshold``, lower it elsewhere; clip to :math:`[0, 1]`.

    A class without synthetic nodes counts as not recognised.
    """
    num_classes = lam.numel()
    correct = torch.bincount(labels[predicted == labels], minlength=num_classes).to(lam.dtype)
    total = torch.bincount(labels, minlength=num_classes).to(lam.dtype)
    accuracy = correct / total.clamp(min=1)
    direction = torch.where(accuracy > threshold, 1.0, -1.0).to(lam.dtype)
    return (lam + step * direction).clamp(0.0, 1.0)
