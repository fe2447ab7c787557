"""Clients trained together take each client's sequential steps to the bit (stamen/models/together.py)."""

from __future__ import annotations

import copy

import pytest
import torch
from torch_geometric.data import Data

from stamen.algorithms.fedsage.model import MendedClassifier, NeighGen
from stamen.models import build_model
from stamen.models.together import (
    ClientBlock,
    computed_graph,
    fit_together,
    forward_together,
    trained_module,
    trains_together,
)
from stamen.models.training import adam, fit


def _client(seed: int, nodes: int, features: int, sparse: bool) -> Data:
    generator = torch.Generator().manual_seed(seed)
    x = torch.rand(nodes, features, generator=generator)
    if sparse:  # a bag of words: about 5% of the entries
        x = (x < 0.05).float()
    edges = torch.randint(0, nodes, (2, 4 * nodes), generator=generator)
    edges = torch.cat([edges, edges.flip(0), torch.tensor([[0, 0], [1, 1]])], dim=1)  # both ways, one repeated
    y = torch.randint(0, 4, (nodes,), generator=generator)
    train = torch.rand(nodes, generator=generator) < 0.4
    return Data(x=x, edge_index=edges, y=y, train_mask=train, num_classes=4)


def _train_in_turn(template, datas, seeds, rounds, epochs, mu=0.0):
    models = [copy.deepcopy(template) for _ in datas]
    optimizers = [adam(m.parameters(), 0.01, 5e-4) for m in models]
    losses = []
    for r in range(rounds):
        for model, optimizer, data, seed in zip(models, optimizers, datas, seeds):
            model.load_state_dict(template.state_dict())
            torch.default_generator.manual_seed(seed + r)  # as the client's handler seeds its draws
            losses.append(fit(model, data, epochs, optimizer, proximal_mu=mu))
    return [dict(m.named_parameters()) for m in models], losses


def _train_together(template, datas, seeds, rounds, epochs, mu=0.0):
    names = [name for name, _ in template.named_parameters()]
    weights = [{n: p.detach().clone().requires_grad_() for n, p in template.named_parameters()} for _ in datas]
    optimizer = adam([w[n] for w in weights for n in names], 0.01, 5e-4)
    block, losses = ClientBlock(datas), []
    for r in range(rounds):
        with torch.no_grad():
            for w in weights:
                for name, value in template.named_parameters():
                    w[name].copy_(value)
        generators = [torch.Generator().manual_seed(seed + r) for seed in seeds]
        losses += fit_together(template, weights, block, epochs, optimizer, generators, mu)
    return weights, losses


@pytest.mark.parametrize(
    ("name", "layers", "sparse", "dropout", "mu"),
    [
        ("gcn", 2, True, 0.5, 0.0),
        ("gcn", 2, True, 0.5, 0.1),  # FedProx's proximal term
        ("gcn", 3, False, 0.5, 0.0),
        ("gcn", 1, True, 0.0, 0.0),
        ("sage", 2, True, 0.5, 0.0),
        ("sage", 2, False, 0.3, 0.0),
        ("mlp", 2, True, 0.5, 0.0),
        ("mlp", 3, False, 0.5, 0.0),
        ("sgc", 2, True, 0.5, 0.0),
        ("sgc", 2, False, 0.5, 0.0),
    ],
)
def test_together_equals_in_turn_to_the_bit(name, layers, sparse, dropout, mu):
    datas = [_client(seed, nodes, 40, sparse) for seed, nodes in ((0, 30), (1, 55), (2, 17))]
    torch.manual_seed(0)
    template = build_model(name, 40, 4, hidden=16, num_layers=layers, dropout=dropout)
    assert trains_together(template, torch.device("cpu"))
    seeds = [11, 12, 13]
    in_turn, turn_losses = _train_in_turn(template, datas, seeds, rounds=2, epochs=3, mu=mu)
    together, together_losses = _train_together(template, datas, seeds, rounds=2, epochs=3, mu=mu)
    assert together_losses == turn_losses  # round by round, client by client
    for ours, theirs in zip(together, in_turn):
        for key, value in theirs.items():
            assert torch.equal(ours[key], value), (name, key)


@pytest.mark.parametrize("name", ["gcn", "sage", "mlp", "sgc"])
@pytest.mark.parametrize("shared", [True, False])
def test_evaluation_forward_equals_the_models(name, shared):
    datas = [_client(seed, nodes, 40, True) for seed, nodes in ((3, 25), (4, 40), (5, 9))]
    torch.manual_seed(1)
    model = build_model(name, 40, 4, hidden=16).eval()
    own = dict(model.named_parameters())
    weights = [own] * 3 if shared else [{k: v.clone() for k, v in own.items()} for _ in datas]  # one dict: stacked
    with torch.no_grad():
        logits = forward_together(model, weights, ClientBlock(datas), [], training=False)
        for out, data in zip(logits, datas):
            assert torch.equal(out, model(data.x, data.edge_index))


def test_what_does_not_train_together():
    cpu = torch.device("cpu")
    assert not trains_together(build_model("gat", 8, 3), cpu)
    assert not trains_together(build_model("appnp", 8, 3), cpu)
    assert not trains_together(build_model("gcn", 8, 3), torch.device("meta"))
    hooked = build_model("gcn", 8, 3)
    hooked.encoder.layers[0].register_forward_hook(lambda *args: None)
    assert not trains_together(hooked, cpu)
    generator = NeighGen(8, hidden=4, max_pred=2)
    assert trains_together(MendedClassifier(build_model("sage", 8, 3), generator), cpu)  # FedSage's: its classifier
    assert not trains_together(MendedClassifier(build_model("gat", 8, 3), generator), cpu)
    mended = MendedClassifier(build_model("gcn", 8, 3), generator)
    mended.register_forward_pre_hook(lambda *args: None)
    assert not trains_together(mended, cpu)


def test_a_mended_classifier_forward_equals_the_models():
    """FedSage's classifier on its mended graph (own rows sparse, generated rows dense): the logits of its own nodes."""
    datas = [_client(seed, nodes, 40, True) for seed, nodes in ((6, 25), (7, 40))]
    torch.manual_seed(2)
    generators = [NeighGen(40, hidden=8, max_pred=3).eval() for _ in datas]
    for generator in generators:  # about 1.5 missing neighbours a node, varying by node
        torch.nn.init.constant_(generator.degree_head.bias, 1.5)
    models = [MendedClassifier(build_model("gcn", 40, 4, hidden=16), g).eval() for g in generators]
    weights = [dict(trained_module(m).named_parameters()) for m in models]
    graphs = [computed_graph(m, d) for m, d in zip(models, datas)]
    assert all(x.size(0) > d.num_nodes for (x, _), d in zip(graphs, datas))  # neighbours were generated
    with torch.no_grad():
        logits = forward_together(models[0].classifier, weights, ClientBlock(datas, graphs), [], training=False)
        for out, model, data in zip(logits, models, datas):
            assert torch.equal(out, model(data.x, data.edge_index))
