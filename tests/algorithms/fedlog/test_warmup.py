"""FedLoG's warm-up: Stamen's early stopping never reads a test label; the authors' (``on_test``) stops on them.

A small graph of two noisy classes, its nodes split into training, validation and test nodes. The
default warm-up must give the same weights and epoch count whatever the test nodes' labels are; the
authors' rule must not (their labels decide when it stops), and it keeps the last epoch's weights, from
which the authors' client trains on.
"""

import torch
from torch_geometric.data import Data

from stamen.algorithms.fedlog.model import FedLoGNet
from stamen.algorithms.fedlog.training import FedLoGHyper, warm_up

HYPER = FedLoGHyper(lr=0.05, weight_decay=0.0, batch_size=16, beta_metric=1.0, beta_norm=1.0, beta_cd=1.0,
                    lambda_step=0.001, lambda_threshold=0.8)  # fmt: skip
EPOCHS, PATIENCE = 40, 2


def _graph() -> Data:
    generator = torch.Generator().manual_seed(3)
    n = 90
    y = torch.arange(n) % 2
    x = torch.randn(n, 6, generator=generator) + 0.6 * y.unsqueeze(1)
    edge_index = torch.randint(0, n, (2, 300), generator=generator)
    role = torch.arange(n) % 3
    return Data(x=x, edge_index=edge_index, y=y, train_mask=role == 0, val_mask=role == 1, test_mask=role == 2)


def _warm_up(data: Data, on_test: bool) -> tuple[int, dict[str, torch.Tensor]]:
    torch.manual_seed(0)
    model = FedLoGNet(in_dim=6, num_classes=2, hidden=8, embedding=4, num_proto=2)
    ran = warm_up(model, data, HYPER, EPOCHS, PATIENCE, on_test=on_test)
    return ran, {name: value.clone() for name, value in model.state_dict().items()}


def _other_test_labels(data: Data) -> Data:
    changed = data.clone()
    changed.y = torch.where(data.test_mask, 1 - data.y, data.y)
    return changed


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_the_default_warm_up_never_reads_a_test_label():
    data = _graph()
    ran, weights = _warm_up(data, on_test=False)
    ran_changed, weights_changed = _warm_up(_other_test_labels(data), on_test=False)
    assert ran < EPOCHS  # it stopped early, on validation
    assert ran == ran_changed and _same(weights, weights_changed)


def test_the_authors_warm_up_stops_on_the_test_labels():
    data = _graph()
    ran, weights = _warm_up(data, on_test=True)
    ran_changed, weights_changed = _warm_up(_other_test_labels(data), on_test=True)
    assert ran < EPOCHS
    assert ran != ran_changed and not _same(weights, weights_changed)


def test_the_authors_warm_up_keeps_the_last_epochs_weights():
    data = _graph()
    ran, weights = _warm_up(data, on_test=True)  # stopped PATIENCE epochs after its best test epoch
    # the same epochs without early stopping (no validation node: accuracy 0 every epoch, a tie, so the best
    # validation epoch is the last) end at the same last epoch's weights
    plain = data.clone()
    plain.val_mask = torch.zeros_like(data.val_mask)
    torch.manual_seed(0)
    model = FedLoGNet(in_dim=6, num_classes=2, hidden=8, embedding=4, num_proto=2)
    assert warm_up(model, plain, HYPER, ran, PATIENCE) == ran
    assert _same(weights, model.state_dict())
