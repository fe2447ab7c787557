"""FED-PUB as its authors' code: the proxy graph's size and shape, Adam's moments kept across rounds."""

import pytest
import torch

from stamen.algorithms.fedpub.client import OPTIMIZER
from stamen.algorithms.fedpub.masked import PROXY_EDGE_PROB, proxy_graph
from stamen.client.job import private_tensors
from stamen.contract.run_config import RunConfig
from stamen.server.algorithms import server_algorithm
from stamen.server.loop import run_rounds
from stamen.simulations.inprocess import InProcessGrid, task_identity


def test_the_default_proxy_is_the_authors_five_disjoint_random_graphs_of_100_nodes():
    config = RunConfig()
    nodes, graphs = config.option("fedpub-proxy-nodes"), config.option("fedpub-proxy-graphs")
    assert (nodes, graphs) == (100, 5)
    x, edges = proxy_graph(nodes, 16, seed=0, graphs=graphs)
    assert x.shape == (500, 16)
    assert bool((edges[0] // nodes == edges[1] // nodes).all())  # no edge between two parts
    assert bool((edges[0] != edges[1]).all())
    degree = torch.bincount(edges[0], minlength=500).float()
    for part in range(graphs):  # every part is G(100, 0.1): mean degree 9.9, within sampling error
        assert abs(float(degree[part * nodes : (part + 1) * nodes].mean()) - PROXY_EDGE_PROB * (nodes - 1)) < 1.5
    again = proxy_graph(nodes, 16, seed=0, graphs=graphs)
    other = proxy_graph(nodes, 16, seed=1, graphs=graphs)
    assert torch.equal(again[0], x) and torch.equal(again[1], edges)
    assert not torch.equal(other[0], x)


@pytest.mark.parametrize("keep", [True, False])
def test_fedpub_clients_keep_adams_moments_across_rounds_as_the_authors_client(keep):
    rounds = 3
    config = RunConfig.from_flower(
        {"algorithm": "fedpub", "num-server-rounds": rounds, "csbm-nodes": 300, "keep-optimizer-state": keep}
    )
    with task_identity():
        grid = InProcessGrid(config.to_flower(), 3)
        strategy = server_algorithm("fedpub").make_strategy(config)
        run_rounds(grid, strategy, rounds, False, 2, 60.0, lambda row: None)
    for context in grid.contexts.values():
        if not keep:
            assert OPTIMIZER not in context.state
            continue
        state = private_tensors(context.state[OPTIMIZER])
        # one Adam over weights and masks, one step per round (local-epochs = 1): its count went on
        assert torch.all(state["step"] == rounds * config.local_epochs)


def _fit_masks(l1: float) -> torch.Tensor:
    """The first layer's mask after 5 epochs on data whose last feature is always 0 (no cross-entropy gradient)."""
    from torch_geometric.data import Data

    from stamen.algorithms.fedpub.masked import MaskedClassifier, fit_masked
    from stamen.models.node_classifier import build_model
    from stamen.models.training import adam

    torch.manual_seed(0)
    x = torch.randn(40, 6)
    x[:, -1] = 0.0
    edges = torch.randint(40, (2, 120))
    data = Data(x=x, edge_index=edges, y=torch.randint(3, (40,)), train_mask=torch.ones(40, dtype=torch.bool))
    model = MaskedClassifier(build_model("mlp", 6, 3, hidden=8, num_layers=2), prune_below=1e-3)
    optimizer = adam(model.base.parameters(), 0.01)
    optimizer.add_param_group({"params": list(model.masks.parameters()), "weight_decay": 0.0})
    fit_masked(model, data, 5, optimizer, l1, 0.0)
    return next(iter(model.masks.values())).detach()


def test_the_default_loss_is_the_authors_codes_where_the_l1_term_has_no_gradient():
    config = RunConfig()
    assert config.option("fedpub-l1") == config.option("fedpub-loc-l2") == 0.0 and config.option("fedpub-prune") == 1e-3
    authors = _fit_masks(config.option("fedpub-l1"))
    paper = _fit_masks(1e-3)
    # the mask column of the always-zero feature: cross-entropy never moves it; the paper's L1 term does
    assert torch.all(authors[:, -1] == 1.0)
    assert torch.all(paper[:, -1] < 1.0 - 0.04)  # five Adam steps of about lr = 0.01 each
    assert not torch.equal(authors[:, :-1], torch.ones_like(authors[:, :-1]))  # the other entries did train
