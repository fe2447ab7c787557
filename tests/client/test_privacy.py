"""DP-SGD on decoupled models: accounting over rounds, unwrapping, clipping, refusals."""

import pytest
import torch
from flwr.app import RecordDict
from opacus.accountants import RDPAccountant
from torch_geometric.data import Data

from stamen.client.privacy import (
    RowClassifier,
    load_accountant,
    noise_multiplier,
    propagated_rows,
    sample_rate,
    save_accountant,
    train_private,
)
from stamen.contract.run_config import RunConfig
from stamen.models import build_model

DP = {"privacy": "dp-sgd", "model": "sgc", "dropout": 0.0, "dp-batch-size": 10, "local-epochs": 2}


def _graph(num_nodes: int = 60, num_features: int = 8, scale: float = 1.0) -> Data:
    generator = torch.Generator().manual_seed(0)
    y = torch.randint(0, 3, (num_nodes,), generator=generator)
    x = scale * (torch.randn(num_nodes, num_features, generator=generator) + y[:, None].float())
    edge_index = torch.randint(0, num_nodes, (2, 4 * num_nodes), generator=generator)
    train_mask = torch.zeros(num_nodes, dtype=torch.bool)
    train_mask[:40] = True
    return Data(x=x, edge_index=edge_index, y=y, train_mask=train_mask, num_classes=3)


def _model(config: RunConfig, data: Data):
    torch.manual_seed(0)
    return build_model(config.model, data.num_features, 3, hidden=16, num_layers=2, dropout=config.dropout)


def _round(model, data, config, state: RecordDict, seed: int):
    accountant = load_accountant(state)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    result = train_private(model, data, config, optimizer, accountant, torch.Generator().manual_seed(seed))
    save_accountant(state, accountant)
    return result


def test_epsilon_grows_over_rounds_and_equals_the_accountant_of_all_steps():
    config = RunConfig.from_flower({**DP, "noise-multiplier": 1.1})
    data = _graph()
    model, state = _model(config, data), RecordDict()
    epsilons = [_round(model, data, config, state, seed).epsilon for seed in range(3)]
    assert 0 < epsilons[0] < epsilons[1] < epsilons[2] < float("inf")
    rate = sample_rate(40, 10)
    steps_per_round = config.local_epochs * round(1 / rate)
    direct = RDPAccountant()
    direct.history = [(1.1, rate, 3 * steps_per_round)]
    assert epsilons[2] == pytest.approx(direct.get_epsilon(config.target_delta), rel=1e-9)


def test_target_epsilon_is_spent_by_the_end_of_the_run():
    config = RunConfig.from_flower({**DP, "target-epsilon": 3.0, "num-server-rounds": 2})
    data = _graph()
    model, state = _model(config, data), RecordDict()
    results = [_round(model, data, config, state, seed) for seed in range(2)]
    assert results[0].noise_multiplier == noise_multiplier(config, 40) > 0
    assert results[-1].epsilon == pytest.approx(3.0, abs=0.05)


@pytest.mark.parametrize("name", ["sgc", "mlp"])
def test_unwrapped_model_is_the_non_private_model(name):
    config = RunConfig.from_flower({**DP, "model": name, "noise-multiplier": 1.0})
    data = _graph()
    model = _model(config, data)
    _round(model, data, config, RecordDict(), 0)
    reference = _model(config, data).state_dict()
    sent = model.state_dict()
    assert list(sent) == list(reference)
    assert all(sent[k].shape == reference[k].shape for k in reference)
    assert not any(k.startswith("_module") for k in sent)
    assert all(not hasattr(p, "grad_sample") or p.grad_sample is None for p in model.parameters())
    assert not any(module._forward_hooks for module in model.modules())
    model.eval()
    model(data.x, data.edge_index)  # a plain forward pass again, no Opacus hooks in the way


@pytest.mark.parametrize("name", ["sgc", "mlp"])
def test_rows_then_per_node_network_equal_the_full_model(name):
    config = RunConfig.from_flower({**DP, "model": name, "dropout": 0.5})
    data = _graph()
    model = _model(config, data).eval()
    rows = propagated_rows(model, data)
    assert torch.allclose(RowClassifier(model)(rows), model(data.x, data.edge_index), atol=1e-5)


def test_clipping_bounds_every_per_sample_gradient():
    """With (almost) no noise and the whole training set in the batch, one SGD step of rate 1
    moves the weights by the mean of the clipped per-sample gradients: at most the clip norm,
    although the raw gradients are hundreds of times larger."""
    clip = 0.01
    config = RunConfig.from_flower(
        {**DP, "noise-multiplier": 1e-6, "max-grad-norm": clip, "dp-batch-size": 40, "local-epochs": 1}
    )
    data = _graph(scale=100.0)
    model = _model(config, data)
    rows = propagated_rows(model, data)[data.train_mask]
    labels = data.y[data.train_mask]

    def gradient_norm(i: int) -> float:
        loss = torch.nn.functional.cross_entropy(RowClassifier(model)(rows[i : i + 1]), labels[i : i + 1])
        return float(torch.cat([g.flatten() for g in torch.autograd.grad(loss, list(model.parameters()))]).norm())

    assert max(gradient_norm(i) for i in range(len(labels))) > 100 * clip
    before = torch.cat([p.detach().flatten().clone() for p in model.parameters()])
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    train_private(model, data, config, optimizer, RDPAccountant(), torch.Generator().manual_seed(0))
    moved = (torch.cat([p.detach().flatten() for p in model.parameters()]) - before).norm()
    assert 0 < moved <= clip * 1.001


def test_impossible_settings_are_refused():
    with pytest.raises(ValueError, match="lower dp-batch-size to at most 40"):
        train_private(
            _model(RunConfig.from_flower(DP), _graph()),
            _graph(),
            RunConfig.from_flower({**DP, "dp-batch-size": 41}),
            torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1.0),
            RDPAccountant(),
            torch.Generator(),
        )
    with pytest.raises(ValueError, match="choose one of: sgc, mlp"):
        RunConfig.from_flower({**DP, "model": "gcn"})
    with pytest.raises(ValueError, match="target-delta must lie in"):
        RunConfig.from_flower({**DP, "target-delta": 1.0})
    with pytest.raises(ValueError, match="noise-multiplier must be > 0"):
        RunConfig.from_flower({**DP, "noise-multiplier": 0.0, "target-epsilon": 2.0})
    with pytest.raises(ValueError, match="cannot be reached"):
        noise_multiplier(RunConfig.from_flower({**DP, "target-epsilon": 1e-6}), 40)
