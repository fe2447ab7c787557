"""Closed-form NTKs against wide finite networks, the reference variant by hand, validation."""

import math

import numpy as np
import pytest
import torch

from stamen.certify.ntk import dense_adjacency, ntk, propagation_matrix, validate_kernel

EDGES = np.array([[0, 1, 1, 2, 2, 3, 3, 0, 1, 4], [1, 0, 2, 1, 3, 2, 0, 3, 4, 1]])
WIDTH = 16384


def _graph():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3))
    adj = dense_adjacency(EDGES, 5)
    return x, adj


def _empirical_ntk(arch, x, adj, width=WIDTH, seed=0, alpha=0.1):
    """J J^T of a width-``width`` network in NTK parametrisation (float64, torch autograd)."""
    torch.manual_seed(seed)
    X = torch.tensor(x)
    n, d = x.shape
    s_row = torch.tensor(propagation_matrix(adj, "row"))
    params = {"w1": torch.randn(d, width, dtype=torch.float64), "w2": torch.randn(width, dtype=torch.float64)}
    if arch == "mlp":
        params["b1"] = torch.randn(width, dtype=torch.float64)
        params["b2"] = torch.randn((), dtype=torch.float64)
    if arch in ("gcn_skippc", "gcn_skipalpha"):
        params["v"] = torch.randn(d, dtype=torch.float64)
    for p in params.values():
        p.requires_grad_(True)

    def relu_layer(h):
        return math.sqrt(2.0 / width) * torch.relu(h)

    def forward():
        w1, w2 = params["w1"], params["w2"]
        if arch == "gcn":
            return s_row @ (relu_layer(s_row @ X @ w1) @ w2)
        if arch == "sgc":
            return s_row @ ((s_row @ X @ w1) @ w2) / math.sqrt(width)
        if arch == "mlp":
            return relu_layer(X @ w1 + params["b1"]) @ w2 + params["b2"]
        if arch == "gcn_skippc":
            return s_row @ (relu_layer(s_row @ X @ w1) @ w2) + s_row @ X @ params["v"]
        if arch == "gcn_skipalpha":
            p = (1 - alpha) * s_row + alpha * torch.eye(n, dtype=torch.float64)
            return (1 - alpha) * s_row @ (relu_layer(p @ X @ w1) @ w2) + alpha * X @ params["v"]
        raise AssertionError(arch)

    out = forward()
    rows = []
    for i in range(n):
        grads = torch.autograd.grad(out[i], list(params.values()), retain_graph=True)
        rows.append(torch.cat([g.reshape(-1) for g in grads]))
    jac = torch.stack(rows)
    return (jac @ jac.T).numpy()


@pytest.mark.parametrize("arch", ["gcn", "sgc", "mlp", "gcn_skippc", "gcn_skipalpha"])
def test_analytic_ntk_matches_wide_network(arch):
    x, adj = _graph()
    analytic = ntk(x, EDGES, arch)
    emp = _empirical_ntk(arch, x, adj)
    rel = np.linalg.norm(emp - analytic) / np.linalg.norm(analytic)
    assert rel < 0.04, rel


def test_sgc_closed_form():
    x, adj = _graph()
    s = propagation_matrix(adj, "row")
    s2 = s @ s
    expected = 2 * s2 @ x @ x.T @ s2.T
    for variant in ("textbook", "reference"):
        assert np.allclose(ntk(x, EDGES, "sgc", variant=variant), expected, rtol=1e-12, atol=1e-12)


def _hand_reference_gcn(x, edges, n):
    """Reference GCN NTK (depth 1) written out entry by entry."""
    a = [[0.0] * n for _ in range(n)]
    for u, v in zip(*edges):
        if u != v:
            a[u][v] = a[v][u] = 1.0
    for i in range(n):
        a[i][i] = 1.0
    s = [[a[i][j] / sum(a[i]) for j in range(n)] for i in range(n)]
    sx = [[sum(s[i][k] * x[k][f] for k in range(n)) for f in range(len(x[0]))] for i in range(n)]
    sig = [[sum(sx[i][f] * sx[j][f] for f in range(len(x[0]))) for j in range(n)] for i in range(n)]
    for i in range(n):
        for j in range(n):
            if i != j and (sig[i][j] > sig[i][i] or sig[i][j] > sig[j][j]):
                sig[i][j] = min(sig[i][i], sig[j][j])
    e = [[0.0] * n for _ in range(n)]
    ed = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            q = math.sqrt(sig[i][i] * sig[j][j])
            u = 1.0 if i == j else sig[i][j] / q
            e[i][j] = q * (u * (math.pi - math.acos(u)) + math.sqrt(max(1 - u * u, 0))) / math.pi
            ed[i][j] = (math.pi - math.acos(u)) / math.pi
    inner = [[sig[i][j] * ed[i][j] + e[i][j] for j in range(n)] for i in range(n)]
    return np.array(
        [[sum(s[i][k] * inner[k][q] * s[j][q] for k in range(n) for q in range(n)) for j in range(n)] for i in range(n)]
    )


def test_reference_variant_matches_hand_computation_and_differs_from_textbook():
    # path 0-1-2 with growing features: S X has rank one, so u = 1 in the textbook
    # kernel, while the reference clamps Sigma_01 = 3.5 > Sigma_00 = 2.25 down to 2.25
    x = np.array([[1.0], [2.0], [4.0]])
    edges = np.array([[0, 1, 1, 2], [1, 0, 2, 1]])
    ref = ntk(x, edges, "gcn", variant="reference")
    hand = _hand_reference_gcn(x.tolist(), edges, 3)
    assert np.allclose(ref, hand, rtol=1e-12, atol=0)
    text = ntk(x, edges, "gcn", variant="textbook")
    assert np.max(np.abs(text - ref) / np.abs(ref)) > 1e-3
    # textbook with u = 1: Theta = S(Sigma)S^T + S(Sigma)S^T = 2 S Sigma S^T
    s = propagation_matrix(dense_adjacency(edges, 3), "row")
    sig = s @ x @ x.T @ s.T
    assert np.allclose(text, 2 * s @ sig @ s.T, rtol=1e-12)


@pytest.mark.parametrize("arch", ["gcn", "appnp", "graphsage", "gin", "mlp", "gcn_skippc", "gcn_skipalpha"])
def test_kernels_are_valid(arch):
    x, _ = _graph()
    for variant in ("textbook", "reference"):
        k = ntk(x, EDGES, arch, depth=1, variant=variant)
        validate_kernel(k, 5)
    if arch in ("gcn", "gin", "graphsage"):
        validate_kernel(ntk(x, EDGES, arch, depth=2), 5)


def _relu_exp(sig, clamp):
    sig = sig.copy()
    d = np.diag(sig).copy()
    if clamp:
        over = (sig > d[None, :]) | (sig > d[:, None])
        sig[over] = np.minimum(d[None, :], d[:, None])[over]
    q = np.sqrt(d[None, :] * d[:, None])
    u = np.clip(sig / q, -1, 1)
    np.fill_diagonal(u, 1.0)
    e = q * (u * (np.pi - np.arccos(u)) + np.sqrt(1 - u * u)) / np.pi
    return e, (np.pi - np.arccos(u)) / np.pi, sig


def test_depth2_recursion_both_variants():
    # Theta_3 = Sigma_3 + S(Sigma_2 * dE_2)S^T + S(S(Sigma_1 * dE_1)S^T * dE_2)S^T
    rng = np.random.default_rng(1)
    x = rng.standard_normal((5, 4))
    s = propagation_matrix(dense_adjacency(EDGES, 5), "row")
    for variant, clamp in (("textbook", False), ("reference", True)):
        sig1 = s @ x @ x.T @ s.T
        e1, d1, sig1 = _relu_exp(sig1, clamp)
        sig2 = s @ e1 @ s.T
        e2, d2, sig2 = _relu_exp(sig2, clamp)
        sig3 = s @ e2 @ s.T
        first = s @ (sig1 * d1) @ s.T
        if clamp:
            first = first.astype(np.float32).astype(np.float64)  # the reference's .float()
        expected = sig3 + s @ (sig2 * d2) @ s.T + s @ (first * d2) @ s.T
        assert np.allclose(ntk(x, EDGES, "gcn", depth=2, variant=variant), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    "matrix, message",
    [
        (np.ones((3, 2)), "square"),
        (np.array([[1.0, 2.0], [0.0, 1.0]]), "not symmetric"),
        (np.array([[1.0, np.nan], [np.nan, 1.0]]), "NaN/inf"),
        (np.array([[1.0, 2.0], [2.0, 1.0]]), "not positive semi-definite"),
        (np.eye(4), "graph has 3 nodes"),
        (np.array([["a"]]), "numeric"),
    ],
)
def test_kernel_validation_errors(matrix, message):
    with pytest.raises(ValueError, match=message):
        validate_kernel(matrix, 3 if message == "graph has 3 nodes" else None)


def test_ntk_rejects_bad_arguments():
    x, _ = _graph()
    with pytest.raises(ValueError, match="unknown architecture"):
        ntk(x, EDGES, "transformer")
    with pytest.raises(ValueError, match="variant"):
        ntk(x, EDGES, "gcn", variant="exact")
    with pytest.raises(ValueError, match="depth"):
        ntk(x, EDGES, "gcn", depth=0)
    with pytest.raises(ValueError, match="outside"):
        ntk(x, np.array([[0], [9]]), "gcn")
