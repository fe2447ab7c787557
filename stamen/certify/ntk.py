r"""Closed-form neural tangent kernels (NTKs) of graph neural networks, in float64.

A sufficiently wide network trained by gradient descent behaves like a kernel
machine with its NTK :math:`\Theta`. This module computes :math:`\Theta` for the
architectures of Sabanayagam, Gosch et al. (ICLR 2025) on a graph with adjacency
:math:`\mathbf{A}` and features :math:`\mathbf{X}`.

**Networks** (NTK parametrisation, He scaling :math:`c_\sigma = 2` for ReLU, width
:math:`h \to \infty`, all weights standard normal, depth :math:`L` = number of hidden
layers; :math:`\mathbf{S}` is the propagation matrix):

.. math::
    \mathbf{H}_1 = \mathbf{S}\mathbf{X}\mathbf{W}_1, \qquad
    \mathbf{G}_l = \sqrt{2/h}\,\phi(\mathbf{H}_l), \qquad
    \mathbf{H}_{l+1} = \mathbf{S}\mathbf{G}_l\mathbf{W}_{l+1}, \qquad
    f = \mathbf{H}_{L+1}.

**ReLU expectations.** For a covariance :math:`\boldsymbol\Sigma` let
:math:`q_{ij} = \sqrt{\Sigma_{ii}\Sigma_{jj}}` and :math:`u_{ij} = \Sigma_{ij}/q_{ij}`;
with

.. math::
    \kappa_0(u) = \frac{\pi - \arccos u}{\pi}, \qquad
    \kappa_1(u) = \frac{u(\pi - \arccos u) + \sqrt{1-u^2}}{\pi},

the scaled expectations are :math:`\mathbf{E} = 2\,\mathbb{E}[\phi(h_i)\phi(h_j)] =
\mathbf{q}\odot\kappa_1(\mathbf{u})` and :math:`\dot{\mathbf{E}} =
2\,\mathbb{E}[\phi'(h_i)\phi'(h_j)] = \kappa_0(\mathbf{u})`. A linear activation
(SGC) has :math:`\mathbf{E} = \boldsymbol\Sigma`, :math:`\dot{\mathbf{E}} = \mathbf{1}`.

**Recursion** (GCN, SGC, GraphSAGE):

.. math::
    \boldsymbol\Sigma_1 = \mathbf{S}\mathbf{X}\mathbf{X}^\top\mathbf{S}^\top = \boldsymbol\Theta_1,
    \qquad
    \boldsymbol\Sigma_{l+1} = \mathbf{S}\mathbf{E}_l\mathbf{S}^\top, \qquad
    \boldsymbol\Theta_{l+1} = \boldsymbol\Sigma_{l+1}
        + \mathbf{S}(\boldsymbol\Theta_l\odot\dot{\mathbf{E}}_l)\mathbf{S}^\top,
    \qquad \boldsymbol\Theta = \boldsymbol\Theta_{L+1}.

For depth 1 this is :math:`\boldsymbol\Theta = \mathbf{S}(\boldsymbol\Sigma_1\odot
\kappa_0)\mathbf{S}^\top + \mathbf{S}(\mathbf{q}\odot\kappa_1)\mathbf{S}^\top`, and for
SGC :math:`\boldsymbol\Theta = 2\,\mathbf{S}^2\mathbf{X}\mathbf{X}^\top(\mathbf{S}^2)^\top`.

Propagation matrices: ``row`` :math:`\mathbf{D}^{-1}(\mathbf{A}+\mathbf{I})`
(default), ``sym`` :math:`\mathbf{D}^{-1/2}(\mathbf{A}+\mathbf{I})\mathbf{D}^{-1/2}`,
GraphSAGE :math:`\mathbf{D}_A^{-1}\mathbf{A} + \mathbf{I}`, GIN :math:`\mathbf{A}+\mathbf{I}`
(self-loops are always set to weight one).

Other architectures:

* **APPNP**: :math:`f = \boldsymbol\Pi(\mathbf{G}_1\mathbf{W}_2 + \mathbf{b}_2)`,
  :math:`\mathbf{H}_1 = \mathbf{X}\mathbf{W}_1 + \mathbf{b}_1`, with the personalised
  PageRank propagation :math:`\boldsymbol\Pi_{t+1} = (1-\alpha)\mathbf{S}\boldsymbol\Pi_t
  + \alpha\mathbf{I}` (``appnp_iterations`` steps, ``sym`` normalisation by default) and
  :math:`\boldsymbol\Sigma = \mathbf{X}\mathbf{X}^\top + \mathbf{1}`:
  :math:`\boldsymbol\Theta = \boldsymbol\Pi(\boldsymbol\Sigma\odot\dot{\mathbf{E}} +
  \mathbf{E} + \mathbf{1})\boldsymbol\Pi^\top`.
* **MLP**: APPNP with :math:`\alpha = 1`, i.e. :math:`\boldsymbol\Pi = \mathbf{I}`
  (a one-hidden-layer MLP with biases).
* **GIN**: :math:`\mathbf{H}_{l+1} = (\mathbf{A}+\mathbf{I})\mathbf{G}_l\mathbf{W}_{l+1}`,
  read-out without aggregation :math:`f = \mathbf{G}_L\mathbf{W}_{L+1}`:
  :math:`\boldsymbol\Theta = \mathbf{E}_L + \boldsymbol\Theta_L\odot\dot{\mathbf{E}}_L`.
* **GCN skip-PC** (linear skip to the first layer):
  :math:`\mathbf{H}_{l+1} = \mathbf{S}\mathbf{G}_l\mathbf{W}_{l+1} + \mathbf{S}\mathbf{X}\mathbf{V}_{l+1}`,
  so :math:`\boldsymbol\Sigma_{l+1} = \mathbf{S}\mathbf{E}_l\mathbf{S}^\top + \boldsymbol\Sigma_1`.
* **GCN skip-α** (linear skip to the features):
  :math:`\mathbf{H}_1 = \mathbf{P}\mathbf{X}\mathbf{W}_1` with
  :math:`\mathbf{P} = (1-\alpha)\mathbf{S} + \alpha\mathbf{I}`,
  :math:`\mathbf{H}_{l+1} = (1-\alpha)\mathbf{S}\mathbf{G}_l\mathbf{W}_{l+1} + \alpha\mathbf{X}\mathbf{V}_{l+1}`:
  :math:`\boldsymbol\Sigma_{l+1} = (1-\alpha)^2\mathbf{S}\mathbf{E}_l\mathbf{S}^\top + \alpha^2\mathbf{X}\mathbf{X}^\top`,
  :math:`\boldsymbol\Theta_{l+1} = \boldsymbol\Sigma_{l+1} + (1-\alpha)^2\mathbf{S}(\boldsymbol\Theta_l\odot\dot{\mathbf{E}}_l)\mathbf{S}^\top`.

**Variants.** ``"textbook"`` (default) is the exact infinite-width limit of the networks
above: :math:`u` is only clipped to :math:`[-1, 1]` against rounding. ``"reference"``
reproduces the authors' qpcert code: :math:`\mathbf{X}\mathbf{X}^\top` is symmetrised
from its lower triangle; before the ReLU expectations every off-diagonal
:math:`\Sigma_{ij}` that exceeds :math:`\Sigma_{ii}` or :math:`\Sigma_{jj}` is clamped to
:math:`\min(\Sigma_{ii}, \Sigma_{jj})` (a real change whenever the two variances differ,
not only a rounding guard), and the clamped :math:`\boldsymbol\Sigma` is also used in the
:math:`\mathbf{S}(\boldsymbol\Sigma\odot\kappa_0)\mathbf{S}^\top` term; for depth
:math:`\ge 2` the accumulated derivative terms are rounded to float32 once per layer
(as there); skip-α omits the :math:`(1-\alpha)^2` factor on the derivative term. The
linear (SGC) kernel has no clamp in either variant.
"""

from __future__ import annotations

import numpy as np

from stamen.certify.names import NORMALIZATIONS, VARIANTS
from stamen.models.names import NTK_ARCHITECTURES as ARCHITECTURES

MAX_DENSE_NODES = 12000


def dense_adjacency(edge_index: np.ndarray, num_nodes: int) -> np.ndarray:
    """Symmetric 0/1 adjacency (float64) without self-loops from a ``2 x E`` edge index."""
    edge_index = np.asarray(edge_index, dtype=np.int64)
    if edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, E), got {edge_index.shape}")
    if edge_index.size and (edge_index.min() < 0 or edge_index.max() >= num_nodes):
        raise ValueError(f"edge_index refers to nodes outside 0..{num_nodes - 1}")
    if num_nodes > MAX_DENSE_NODES:
        raise ValueError(
            f"graph has {num_nodes} nodes; the dense NTK supports at most {MAX_DENSE_NODES} "
            "(use --classes to certify a two-class subgraph, or pass --kernel)"
        )
    adj = np.zeros((num_nodes, num_nodes))
    adj[edge_index[0], edge_index[1]] = 1.0
    adj = np.maximum(adj, adj.T)
    np.fill_diagonal(adj, 0.0)
    return adj


def propagation_matrix(adj: np.ndarray, kind: str) -> np.ndarray:
    r"""Propagation matrix :math:`\mathbf{S}` of a symmetric 0/1 adjacency without self-loops.

    ``row``: :math:`\mathbf{D}^{-1}(\mathbf{A}+\mathbf{I})`; ``sym``:
    :math:`\mathbf{D}^{-1/2}(\mathbf{A}+\mathbf{I})\mathbf{D}^{-1/2}`; ``sage``:
    :math:`\mathbf{D}_A^{-1}\mathbf{A}+\mathbf{I}` (isolated nodes keep only the self-loop);
    ``sum``: :math:`\mathbf{A}+\mathbf{I}`.
    """
    n = adj.shape[0]
    a_hat = adj.copy()
    np.fill_diagonal(a_hat, 1.0)
    if kind == "row":
        return a_hat / a_hat.sum(axis=1, keepdims=True)
    if kind == "sym":
        d = 1.0 / np.sqrt(a_hat.sum(axis=1))
        return d[:, None] * a_hat * d[None, :]
    if kind == "sage":
        deg = adj.sum(axis=1)
        inv = np.divide(1.0, deg, out=np.zeros(n), where=deg > 0)
        return inv[:, None] * adj + np.eye(n)
    if kind == "sum":
        return a_hat
    raise ValueError(f"unknown propagation {kind!r}; accepted: row, sym, sage, sum")


def appnp_propagation(s: np.ndarray, alpha: float, iterations: int) -> np.ndarray:
    r""":math:`\boldsymbol\Pi_{t+1} = (1-\alpha)\mathbf{S}\boldsymbol\Pi_t + \alpha\mathbf{I}`,
    :math:`\boldsymbol\Pi_0 = \mathbf{I}`, run for ``iterations`` steps."""
    eye = np.eye(s.shape[0])
    pi = eye.copy()
    for _ in range(iterations):
        pi = (1.0 - alpha) * (s @ pi) + alpha * eye
    return pi


def kappa0(u: np.ndarray) -> np.ndarray:
    r""":math:`\kappa_0(u) = (\pi - \arccos u)/\pi`."""
    return (np.pi - np.arccos(u)) / np.pi


def kappa1(u: np.ndarray) -> np.ndarray:
    r""":math:`\kappa_1(u) = (u(\pi - \arccos u) + \sqrt{1 - u^2})/\pi`."""
    return (u * (np.pi - np.arccos(u)) + np.sqrt(np.maximum(1.0 - u * u, 0.0))) / np.pi


def relu_expectations(sigma: np.ndarray, variant: str = "textbook") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Return :math:`(\mathbf{E}, \dot{\mathbf{E}}, \boldsymbol\Sigma')` for a covariance.

    :math:`\mathbf{E} = \mathbf{q}\odot\kappa_1(\mathbf{u})`,
    :math:`\dot{\mathbf{E}} = \kappa_0(\mathbf{u})` with
    :math:`q_{ij} = \sqrt{\Sigma_{ii}\Sigma_{jj}}`, :math:`u_{ij} = \Sigma_{ij}/q_{ij}`,
    :math:`u_{ii} = 1`. :math:`\boldsymbol\Sigma'` is the covariance used downstream:
    ``sigma`` itself (textbook) or its clamped copy (reference, see module docstring).
    Entries with :math:`q_{ij} = 0` (a zero-variance pre-activation) get
    :math:`E_{ij} = 0` and :math:`u_{ij} = 0`.
    """
    diag = np.diag(sigma).copy()
    sig_i = diag[None, :]
    sig_j = diag[:, None]
    if variant == "reference":
        sigma = sigma.copy()
        over = (sigma > sig_i) | (sigma > sig_j)
        sigma[over] = np.minimum(sig_i, sig_j)[over]
    q = np.sqrt(np.maximum(sig_i * sig_j, 0.0))
    u = np.divide(sigma, q, out=np.zeros_like(sigma), where=q > 0)
    np.fill_diagonal(u, 1.0)
    u = np.clip(u, -1.0, 1.0)
    return q * kappa1(u), kappa0(u), sigma


def _gram(x: np.ndarray, variant: str) -> np.ndarray:
    xxt = x @ x.T
    if variant == "reference":
        low = np.tril(xxt)
        return low + np.tril(xxt, -1).T
    return 0.5 * (xxt + xxt.T)


def _expect(sigma: np.ndarray, activation: str, variant: str):
    if activation == "linear":
        return sigma, np.ones_like(sigma), sigma
    return relu_expectations(sigma, variant)


def _round32(a: np.ndarray, variant: str) -> np.ndarray:
    return a.astype(np.float32).astype(np.float64) if variant == "reference" else a


def _gcn_family(xxt, s, depth, activation, skip, skip_alpha, variant):
    """Layer recursion shared by GCN, SGC, GraphSAGE and the skip variants."""
    n = s.shape[0]
    if skip == "alpha":
        p = (1.0 - skip_alpha) * s + skip_alpha * np.eye(n)
        sigma = p @ xxt @ p.T
    else:
        sigma = s @ xxt @ s.T
    sigma_1 = sigma
    grad_scale = (1.0 - skip_alpha) ** 2 if skip == "alpha" and variant == "textbook" else 1.0
    # ``terms`` holds the derivative terms S(Sigma_l * dE_l)S^T pushed through later layers;
    # the textbook variant keeps their sum Theta_l, the reference keeps them separately to
    # reproduce its rounding.
    terms: list[np.ndarray] = []
    for layer in range(depth):
        e, e_der, sigma_used = _expect(sigma, activation, variant)
        if layer == 0 and skip == "pc":
            # the reference clamps Sigma_1 in place, so its skip term is the clamped one
            sigma_1 = sigma_used
        terms = [grad_scale * (s @ (_round32(t, variant) * e_der) @ s.T) for t in terms]
        terms.append(grad_scale * (s @ (sigma_used * e_der) @ s.T))
        # ``terms`` are now in layer l+1's frame; order matters only for the reference rounding
        if skip == "alpha":
            sigma = (1.0 - skip_alpha) ** 2 * (s @ e @ s.T) + skip_alpha**2 * xxt
        elif skip == "pc":
            sigma = s @ e @ s.T + sigma_1
        else:
            sigma = s @ e @ s.T
    return np.sum(terms, axis=0) + sigma


def _gin(xxt, s, depth, variant):
    sigma = s @ xxt @ s.T
    theta = sigma
    for layer in range(depth):
        e, e_der, sigma_used = relu_expectations(sigma, variant)
        if layer == 0:
            theta = sigma_used
        if layer == depth - 1:
            return e + theta * e_der
        theta = s @ (theta * e_der) @ s.T + s @ e @ s.T
        sigma = s @ e @ s.T
    raise AssertionError("unreachable")


def _appnp(x, pi, variant):
    sigma = _gram(x, variant) + 1.0
    e, e_der, sigma_used = relu_expectations(sigma, variant)
    return pi @ (sigma_used * e_der) @ pi.T + pi @ (e + 1.0) @ pi.T


def ntk(
    x: np.ndarray,
    edge_index: np.ndarray,
    arch: str = "gcn",
    depth: int = 1,
    normalization: str | None = None,
    variant: str = "textbook",
    skip_alpha: float = 0.1,
    appnp_alpha: float = 0.1,
    appnp_iterations: int = 10,
) -> np.ndarray:
    r"""NTK :math:`\boldsymbol\Theta \in \mathbb{R}^{n\times n}` of ``arch`` on a graph.

    Args:
        x: node features, shape ``(n, d)``.
        edge_index: edges, shape ``(2, E)``; treated as undirected, self-loops ignored.
        arch: one of ``gcn, sgc, appnp, graphsage, gin, mlp, gcn_skippc, gcn_skipalpha``.
        depth: number of hidden layers :math:`L \ge 1` (APPNP and MLP: 1).
        normalization: ``row`` or ``sym``; ``None`` means ``row`` except APPNP (``sym``,
            as in the reference code). GraphSAGE, GIN and MLP have fixed propagation.
        variant: ``textbook`` or ``reference`` (see module docstring).
        skip_alpha: :math:`\alpha` of ``gcn_skipalpha``.
        appnp_alpha: teleport probability of APPNP.
        appnp_iterations: power-iteration steps of APPNP.

    Returns:
        Symmetric float64 array of shape ``(n, n)``.
    """
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown architecture {arch!r}; accepted: {', '.join(ARCHITECTURES)}")
    if variant not in VARIANTS:
        raise ValueError(f"unknown NTK variant {variant!r}; accepted: {', '.join(VARIANTS)}")
    if normalization is not None and normalization not in NORMALIZATIONS:
        raise ValueError(f"unknown normalization {normalization!r}; accepted: row, sym")
    if not isinstance(depth, (int, np.integer)) or depth < 1:
        raise ValueError(f"depth must be an integer >= 1, got {depth!r}")
    if arch in ("appnp", "mlp") and depth != 1:
        raise ValueError(f"{arch} is implemented with one hidden layer; got depth {depth}")
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"features must have shape (n, d), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("features contain NaN or inf")
    n = x.shape[0]
    adj = dense_adjacency(edge_index, n)
    norm = normalization or ("sym" if arch == "appnp" else "row")

    if arch == "mlp":
        return _symmetrize(_appnp(x, np.eye(n), variant))
    if arch == "appnp":
        pi = appnp_propagation(propagation_matrix(adj, norm), appnp_alpha, appnp_iterations)
        return _symmetrize(_appnp(x, pi, variant))
    xxt = _gram(x, variant)
    if arch == "gin":
        return _symmetrize(_gin(xxt, propagation_matrix(adj, "sum"), depth, variant))
    s = propagation_matrix(adj, "sage" if arch == "graphsage" else norm)
    activation = "linear" if arch == "sgc" else "relu"
    skip = {"gcn_skippc": "pc", "gcn_skipalpha": "alpha"}.get(arch)
    return _symmetrize(_gcn_family(xxt, s, depth, activation, skip, skip_alpha, variant))


def _symmetrize(k: np.ndarray) -> np.ndarray:
    return 0.5 * (k + k.T)


def validate_kernel(kernel: np.ndarray, num_nodes: int | None = None, tol: float = 1e-8) -> np.ndarray:
    """Check a user kernel and return it as a float64 array.

    Checks: a 2-D square array of ``num_nodes`` rows, finite, symmetric to
    ``tol`` relative to its largest entry, and positive semi-definite (smallest
    eigenvalue >= ``-tol`` times the largest absolute eigenvalue). Raises
    ``ValueError`` naming the first failed check.
    """
    k = np.asarray(kernel)
    if k.dtype == object or not np.issubdtype(k.dtype, np.number):
        raise ValueError(f"kernel must be a numeric array, got dtype {k.dtype}")
    k = k.astype(np.float64)
    if k.ndim != 2 or k.shape[0] != k.shape[1]:
        raise ValueError(f"kernel must be a square n x n matrix, got shape {k.shape}")
    if num_nodes is not None and k.shape[0] != num_nodes:
        raise ValueError(f"kernel is {k.shape[0]} x {k.shape[1]} but the graph has {num_nodes} nodes (graph order)")
    if not np.all(np.isfinite(k)):
        bad = int(np.sum(~np.isfinite(k)))
        raise ValueError(f"kernel contains {bad} NaN/inf entries")
    scale = max(float(np.max(np.abs(k))), 1e-300)
    asym = float(np.max(np.abs(k - k.T)))
    if asym > tol * scale:
        raise ValueError(f"kernel is not symmetric: max |K - K^T| = {asym:.3g} (relative {asym / scale:.3g} > {tol:g})")
    k = 0.5 * (k + k.T)
    eig = np.linalg.eigvalsh(k)
    top = max(float(np.max(np.abs(eig))), 1e-300)
    if eig[0] < -tol * top:
        raise ValueError(
            f"kernel is not positive semi-definite: smallest eigenvalue {eig[0]:.3g} "
            f"(relative {eig[0] / top:.3g} < -{tol:g})"
        )
    return k
