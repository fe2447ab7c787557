"""``laf``: label-agnostic (labels deleted or permuted change nothing), loss ranges, it forgets."""

import math

import pytest
import torch

from stamen.contract.requests import parse_request
from stamen.graphs import build_federation
from stamen.unlearn.laf import LAFConfig, alignment_loss, bounded, extractor_loss, laf, laf_traced
from stamen.unlearn.requests import split_federation


@pytest.fixture(scope="module")
def trained(request):
    from tests.unlearn.conftest import small_config, trained_model

    config = small_config(num_server_rounds=20)
    federation = build_federation(config.federation(3))
    model = trained_model(config, 3, seed=0)
    split = split_federation(federation.clients, parse_request("class:1", 3, 4), seed=0)
    return model, split


def test_a_client_holding_one_side_only_has_only_that_side_s_terms():
    errors = torch.tensor([0.5, 2.0])
    empty = torch.zeros(0)
    assert torch.isclose(extractor_loss(errors, empty), bounded(errors).mean())
    assert torch.isclose(extractor_loss(empty, errors), -bounded(errors).mean())
    z = torch.randn(6, 4, generator=torch.Generator().manual_seed(1))
    nothing = torch.zeros(0, 4)
    assert torch.isclose(alignment_loss(-z, z, nothing, nothing, 1.0), torch.tensor(2.0), atol=1e-5)
    assert torch.isclose(alignment_loss(nothing, nothing, -z, z, 1.0), torch.tensor(-2.0), atol=1e-5)


def test_loss_terms_have_their_documented_ranges():
    errors = torch.tensor([0.0, 1e-3, 0.5, 1.0, 10.0, 1e6])
    values = bounded(errors)
    assert values[0] == 1.0 and (values >= 1).all() and (values < math.e).all()
    assert (values.diff() > 0).all()  # increasing in the error
    assert extractor_loss(torch.zeros(4), torch.full((3,), 1e9)) > 1 - math.e
    assert extractor_loss(torch.zeros(4), torch.full((3,), 1e9)) < 1 - math.e + 1e-6
    assert extractor_loss(torch.full((4,), 1e9), torch.zeros(3)) < math.e - 1
    g = torch.Generator().manual_seed(0)
    z = torch.randn(20, 8, generator=g)
    f = torch.randn(5, 8, generator=g)
    for tau in (0.1, 1.0, 10.0):
        # identical to the originals: remaining distance 0, forgotten distance 0 -> 0
        assert alignment_loss(z, z, f, f, tau).abs() < 1e-6
        # remaining flipped (distance 2), forgotten kept: the maximum 2
        assert torch.isclose(alignment_loss(-z, z, f, f, tau), torch.tensor(2.0), atol=1e-5)
        # remaining kept, forgotten flipped: the minimum -2
        assert torch.isclose(alignment_loss(z, z, -f, f, tau), torch.tensor(-2.0), atol=1e-5)
        random = alignment_loss(torch.randn(20, 8, generator=g), z, torch.randn(5, 8, generator=g), f, tau)
        assert -2 <= float(random) <= 2


def _weights(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_laf_never_reads_labels(trained):
    model, split = trained
    base = laf(model, split.original, LAFConfig(steps=3, vae_epochs=30), seed=5)
    permuted, deleted = [], []
    g = torch.Generator().manual_seed(1)
    for data in split.original:
        p = data.clone()
        p.y = p.y[torch.randperm(p.num_nodes, generator=g)]
        permuted.append(p)
        d = data.clone()
        del d.y
        assert "y" not in d
        deleted.append(d)
    with_permuted = laf(model, permuted, LAFConfig(steps=3, vae_epochs=30), seed=5)
    with_deleted = laf(model, deleted, LAFConfig(steps=3, vae_epochs=30), seed=5)
    assert torch.equal(_weights(base), _weights(with_permuted))
    assert torch.equal(_weights(base), _weights(with_deleted))
    # and it did change the encoder (not a no-op), but never the head
    assert not torch.equal(_weights(base.encoder), _weights(model.encoder))
    assert torch.equal(_weights(base.head), _weights(model.head))
    other_seed = laf(model, split.original, LAFConfig(steps=3, vae_epochs=30), seed=6)
    assert not torch.equal(_weights(base), _weights(other_seed))


def test_laf_moves_forgotten_embeddings_more_than_remaining(trained):
    model, split = trained
    trace = laf_traced(model, split.original, LAFConfig(), seed=0)  # a result, not an output channel in the config
    out = trace.model
    assert trace.extractor_loss[-1] < trace.extractor_loss[0]
    assert trace.alignment_loss[-1] < trace.alignment_loss[0]
    with torch.no_grad():
        moved_f, moved_r = [], []
        for data in split.original:
            before, after = model.embed(data.x, data.edge_index), out.embed(data.x, data.edge_index)
            distance = 1 - torch.nn.functional.cosine_similarity(before, after, dim=1)
            moved_f.append(distance[data.forget_mask])
            moved_r.append(distance[data.train_mask & ~data.forget_mask])
    assert torch.cat(moved_f).mean() > 3 * torch.cat(moved_r).mean()


def test_a_later_federated_round_reusing_the_first_rounds_vaes_gives_what_refitting_gives(trained):
    """A federated LAF round after the first takes the VAEs its first round fitted (the client keeps them):
    the same model as fitting them again from the original model, without the fitting."""
    model, split = trained
    config = LAFConfig(steps=1, vae_epochs=30)
    first = laf_traced(model, split.original, config, seed=3)
    assert all(vae is not None for vae in first.vaes)
    refitted = laf_traced(first.model, split.original, config, seed=3, original=model)
    reused = laf_traced(first.model, split.original, config, seed=3, original=model, vaes=first.vaes)
    assert reused.vaes == first.vaes
    assert torch.equal(_weights(reused.model), _weights(refitted.model))
    assert not torch.equal(_weights(reused.model), _weights(first.model))


def test_the_client_keeps_its_laf_vaes_across_rounds_and_rebuilds_them_exactly():
    from flwr.app import RecordDict

    from stamen.client.job import LocalJob
    from stamen.client.unlearning import LAF_VAES, _keep_vaes, _kept_vaes
    from stamen.contract.run_config import RunConfig
    from stamen.unlearn.laf import train_vae

    torch.manual_seed(0)
    vae = train_vae(torch.randn(20, 8), latent=4, hidden=6, epochs=3, lr=0.01, beta=0.1)
    job = LocalJob(RunConfig.from_flower({}), 0, None, torch.device("cpu"), RecordDict())
    assert _kept_vaes(job) is None
    _keep_vaes(job, (vae, None))
    assert LAF_VAES in job.state
    remaining, forget = _kept_vaes(job)
    assert forget is None and not remaining.training
    h = torch.randn(5, 8)
    assert torch.equal(remaining.reconstruction_error(h), vae.reconstruction_error(h))
