"""The closed-form edit of ``wash``: normal equations, limits, federated sums, locality."""

import pytest
import torch

from stamen.unlearn.wash import (
    EditStatistics,
    apply_edit,
    choose_lambda_heldout,
    choose_lambda_norm,
    client_statistics,
    closed_form,
    drop_class_targets,
    head_matrix,
    keys,
    neighbor_targets,
    solve_edit,
    total,
)


def _problem(seed=0, d=6, c=4, n_keep=(40, 30, 25), n_forget=(7, 5)):
    g = torch.Generator().manual_seed(seed)
    keep = [keys(torch.randn(n, d, generator=g, dtype=torch.float64)) for n in n_keep]
    forget = [keys(torch.randn(n, d, generator=g, dtype=torch.float64) + 2.0) for n in n_forget]
    residual = [torch.randn(n, c, generator=g, dtype=torch.float64) for n in n_forget]
    return keep, forget, residual


def test_closed_form_satisfies_its_normal_equations():
    keep, forget, residual = _problem()
    k_r, k_f, r = torch.cat(keep), torch.cat(forget), torch.cat(residual)
    for lam in (1e-3, 0.7, 50.0):
        delta = closed_form(k_r, k_f, r, lam)
        lhs = delta @ (lam * k_r.T @ k_r + k_f.T @ k_f)
        rhs = r.T @ k_f
        assert delta.shape == (4, 7)
        assert torch.allclose(lhs, rhs, atol=1e-8, rtol=0)

        # and it is the minimiser: the gradient of the objective vanishes, a perturbation costs more
        def objective(d, lam=lam):
            return ((d @ k_f.T - r.T) ** 2).sum() + lam * ((d @ k_r.T) ** 2).sum()

        assert objective(delta) < objective(delta + 1e-3 * torch.randn_like(delta))


def test_lambda_to_infinity_leaves_weights_unchanged():
    keep, forget, residual = _problem(1)
    stats = [client_statistics(keep[0], forget[0], residual[0]), client_statistics(keep[1], num_outputs=4)]
    sizes = [float(solve_edit(stats, lam).norm()) for lam in (1.0, 1e3, 1e6, 1e12)]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > 1e-2
    assert sizes[-1] < 1e-8
    head = torch.nn.Linear(6, 4).double()
    before = head_matrix(head).clone()
    apply_edit(head, solve_edit(stats, float("inf")))
    assert torch.equal(head_matrix(head), before)


def test_summed_client_statistics_give_the_centralised_edit():
    keep, forget, residual = _problem(2)
    # client 0 keeps and forgets, client 1 forgets only, client 2 keeps only
    stats = [
        client_statistics(keep[0], forget[0], residual[0]),
        client_statistics(torch.zeros(0, 7, dtype=torch.float64), forget[1], residual[1]),
        client_statistics(torch.cat(keep[1:]), num_outputs=4),
    ]
    for s in stats:  # what travels: d x d and d x C arrays only
        assert {k: tuple(v.shape) for k, v in s.payload().items()} == {
            "keep": (7, 7),
            "forget": (7, 7),
            "cross": (7, 4),
        }
    for lam in (0.01, 1.0, 30.0):
        federated = solve_edit(stats, lam)
        central = closed_form(torch.cat(keep), torch.cat(forget), torch.cat(residual), lam)
        assert torch.allclose(federated, central, atol=1e-8, rtol=0)
    with pytest.raises(ValueError, match="'forget' must be float64"):  # input is checked, not asserted
        EditStatistics(
            torch.zeros(7, 7, dtype=torch.float64),
            torch.zeros(6, 6, dtype=torch.float64),
            torch.zeros(7, 4, dtype=torch.float64),
        )


def test_kept_outputs_barely_move_while_forgotten_outputs_move_a_lot():
    g = torch.Generator().manual_seed(3)
    d = 8
    # kept keys live in the first 5 coordinates, forgotten keys have mass outside them
    kept = torch.zeros(200, d, dtype=torch.float64)
    kept[:, :5] = torch.randn(200, 5, generator=g, dtype=torch.float64)
    forgot = torch.randn(30, d, generator=g, dtype=torch.float64)
    forgot[:, 5:] += 3.0
    k_keep, k_forget = keys(kept), keys(forgot)
    weight = torch.randn(3, d + 1, generator=g, dtype=torch.float64)
    weight[1, 5:d] += 5.0  # the forgotten keys are predicted as class 1
    outputs = k_forget @ weight.T
    targets = drop_class_targets(outputs, 1, margin=2.0)
    stats = client_statistics(k_keep, k_forget, targets - outputs)
    delta = solve_edit(stats, 1e3)  # C is singular off the kept span: only that direction is free
    fresh_kept = torch.zeros(50, d, dtype=torch.float64)
    fresh_kept[:, :5] = torch.randn(50, 5, generator=g, dtype=torch.float64)
    k_fresh = keys(fresh_kept)  # in the span of the kept keys, not used for the edit
    moved_kept = (k_fresh @ delta.T).abs().max()
    moved_forget = (k_forget @ delta.T).abs().mean()
    assert moved_kept < 1e-2 * moved_forget
    assert (outputs.argmax(1) == 1).all()
    after = k_forget @ (weight + delta).T
    assert (after.argmax(1) != 1).float().mean() > 0.6  # least squares over 3 free directions


def test_drop_class_and_neighbor_targets():
    outputs = torch.tensor([[3.0, 1.0, 0.0], [0.0, 2.0, 5.0]], dtype=torch.float64)
    t = drop_class_targets(outputs, 0, margin=1.0)
    assert t.tolist() == [[0.0, 1.0, 0.0], [0.0, 2.0, 5.0]]
    # path 0-1-2-3, node 4 alone; forget 1 and 3
    edge_index = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    out = torch.arange(10, dtype=torch.float64).view(5, 2)
    forget = torch.tensor([False, True, False, True, False])
    targets = neighbor_targets(out, edge_index, forget)
    assert torch.allclose(targets[0], (out[0] + out[2]) / 2)  # node 1: surviving neighbours 0 and 2
    assert torch.allclose(targets[1], out[2])  # node 3: surviving neighbour 2
    only = torch.tensor([False, True, True, True, False])  # node 2: no surviving neighbour, 2-hop: 0
    assert torch.allclose(neighbor_targets(out, edge_index, only)[1], out[0])


def test_lambda_rules():
    keep, forget, residual = _problem(4)
    stats = total([client_statistics(keep[0], forget[0], residual[0]), client_statistics(keep[1], num_outputs=4)])
    weight = torch.randn(4, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    for budget in (0.05, 0.2):
        lam = choose_lambda_norm(stats, weight, budget)
        ratio = float(solve_edit(stats, lam).norm() / weight.norm())
        assert budget * 0.99 <= ratio <= budget + 1e-9
        assert float(solve_edit(stats, lam * 0.9).norm() / weight.norm()) > budget
    held = keep[2]
    lam = choose_lambda_heldout(stats, weight, held, tolerance=0.0)
    changed = ((held @ (weight + solve_edit(stats, lam)).T).argmax(1) != (held @ weight.T).argmax(1)).sum()
    assert changed == 0
