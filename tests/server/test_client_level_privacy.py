"""Client-level DP observed: clipping, the calibrated noise and the adaptive norm, for all four wrappers.

The server's aggregate must equal the equal-weight mean of the *clipped* updates plus
Gaussian noise of standard deviation :math:`\\sigma_\\Delta C_t / m` per coordinate
(:math:`\\sigma_\\Delta = \\sigma` for fixed clipping; for adaptive clipping the share of
:math:`\\sigma` left after the clipped count's noise, Andrew et al. 2021, and :math:`C_t` the
norm that clipped round :math:`t`). The check is a chi-square test of the variance,
:math:`S = \\sum_j d_j^2 / s^2 \\sim \\chi^2_n` over :math:`n` coordinates x rounds, two-sided
at a false-alarm rate of ``ALPHA`` = 1e-6. Each check is also run on a deliberately broken
variant (noise dropped, clipping skipped, Flower's unfixed adaptive wrappers) and must reject it.
"""

import math

import numpy as np
import pytest
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp.mod import centraldp_mods
from flwr.serverapp.strategy import (
    DifferentialPrivacyClientSideAdaptiveClipping,
    DifferentialPrivacyServerSideAdaptiveClipping,
    dp_adaptive_clipping,
    dp_fixed_clipping,
)
from scipy import stats

import stamen.server.privacy as server_privacy
from stamen.client.clipping import client_dp_mod
from stamen.contract import protocol as p
from stamen.contract.run_config import RunConfig
from stamen.server.algorithms import server_algorithm
from stamen.server.privacy import client_dp_strategy
from stamen.simulations.inprocess import task_identity

ALPHA = 1e-6
CLIENTS = 5  # m = N: every client is sampled every round
DIM = 400  # coordinates per round
ROUNDS = 12
NORM = 1.0
SIGMA = 0.3  # adaptive clipping needs sigma < 2 * (m / 20) = 0.5 with Flower's default count noise
MODES = ["server-fixed", "client-fixed", "server-adaptive", "client-adaptive"]


@pytest.fixture(autouse=True)
def flower_task_identity():
    with task_identity():
        yield


def chi_square_accepts(deviations: np.ndarray, std: np.ndarray) -> tuple[bool, float]:
    """Two-sided chi-square test that ``deviations`` are N(0, std^2): (accepted, S / n)."""
    statistic = float(((deviations / std) ** 2).sum())
    n = deviations.size
    low, high = stats.chi2.ppf(ALPHA / 2, n), stats.chi2.isf(ALPHA / 2, n)
    return bool(low <= statistic <= high), statistic / n


def _config(clipping: str) -> RunConfig:
    return RunConfig.from_flower(
        {
            "privacy": "client-dp",
            "clipping": clipping,
            "clipping-norm": NORM,
            "noise-multiplier": SIGMA,
            "min-clients": 1,
        }
    )


def _context(config: RunConfig, node: int) -> Context:
    return Context(0, node, {"partition-id": node, "num-partitions": CLIENTS}, RecordDict(), config.to_flower())


def _trained(arrays: np.ndarray, message: Message) -> Message:
    metrics = MetricRecord({p.UNIT_WEIGHT: 1, p.NUM_EXAMPLES: 10})
    return Message(content=RecordDict({p.ARRAYS: ArrayRecord([arrays]), p.METRICS: metrics}), reply_to=message)


class Grid:
    def get_node_ids(self) -> list[int]:
        return list(range(CLIENTS))


def _rounds(clipping: str, updates: np.ndarray, sigma: float = SIGMA, rounds: int = ROUNDS):
    """Drive the wrapper of ``clipping`` (and Stamen's client mod) through ``rounds`` rounds.

    Client ``k`` sends ``start + updates[k]``. Yields, per round: the weights sent, the
    replies as the server received them, the aggregate, the clipping norm of the round
    and the one after it.
    """
    config = _config(clipping)
    strategy = client_dp_strategy(server_algorithm("fedavg").make_strategy(config), config, CLIENTS, sigma)
    start = np.random.default_rng(1).normal(size=DIM).astype(np.float32)
    for server_round in range(1, rounds + 1):
        norm = strategy.clipping_norm
        messages = list(strategy.configure_train(server_round, ArrayRecord([start]), ConfigRecord(), Grid()))
        replies = []
        for message in messages:
            node = message.metadata.dst_node_id
            message.metadata.__dict__["_message_id"] = f"m{server_round}-{node}"
            reply = client_dp_mod(
                message, _context(config, node), lambda m, c, k=node, s=start: _trained(s + updates[k], m)
            )
            replies.append(reply)
        received = [r.content[p.ARRAYS].to_numpy_ndarrays()[0] - start for r in replies]
        aggregate, _ = strategy.aggregate_train(server_round, replies)
        yield start, np.array(received), aggregate.to_numpy_ndarrays()[0], norm, strategy.clipping_norm, strategy
        start = aggregate.to_numpy_ndarrays()[0]


def _updates(scale: float = 1.0) -> np.ndarray:
    """Five updates of norms 0.5, 1.5, 3, 6, 12 (x ``scale``): most of them above the clipping norm."""
    directions = np.random.default_rng(2).normal(size=(CLIENTS, DIM))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    return (directions * scale * np.array([0.5, 1.5, 3.0, 6.0, 12.0])[:, None]).astype(np.float32)


def _clipped(update: np.ndarray, norm: float) -> np.ndarray:
    return update * min(1.0, norm / float(np.linalg.norm(update)))


def noise_check(clipping: str, rounds: int = ROUNDS) -> tuple[bool, float]:
    """Chi-square test of aggregate - mean of clipped updates against N(0, (sigma_Delta C_t / m)^2)."""
    np.random.seed(7)
    updates = _updates()
    deviations, stds = [], []
    for start, _, aggregate, norm, _, strategy in _rounds(clipping, updates, rounds=rounds):
        expected = start + np.mean([_clipped(u, norm) for u in updates], axis=0)
        deviations.append(aggregate - expected)
        stds.append(np.full(DIM, strategy.noise_multiplier * norm / CLIENTS))  # adaptive: sigma's share for updates
    return chi_square_accepts(np.concatenate(deviations), np.concatenate(stds))


@pytest.mark.parametrize("clipping", MODES)
def test_aggregate_is_the_clipped_mean_plus_calibrated_noise(clipping):
    accepted, ratio = noise_check(clipping)
    assert accepted, f"{clipping}: variance ratio S/n = {ratio:.4f}"


@pytest.mark.parametrize("clipping", MODES)
def test_adaptive_effective_sigma_is_the_split_of_sigma(clipping):
    np.random.seed(0)
    *_, strategy = next(_rounds(clipping, _updates(), rounds=1))
    if clipping.endswith("adaptive"):
        count_std = CLIENTS / 20  # Flower's default clipped-count noise, Andrew et al.'s m/20
        assert strategy.noise_multiplier == pytest.approx((SIGMA**-2 - (2 * count_std) ** -2) ** -0.5)
        assert strategy.noise_multiplier > SIGMA
    else:
        assert strategy.noise_multiplier == SIGMA


@pytest.mark.parametrize("clipping", ["client-fixed", "client-adaptive"])
def test_client_side_clipping_bounds_every_sent_update(clipping):
    for _, received, _, norm, _, _ in _rounds(clipping, _updates(), rounds=3):
        norms = np.linalg.norm(received, axis=1)
        assert norms.max() <= norm * (1 + 1e-5) and norms.max() >= norm * (1 - 1e-5)  # the large ones sit on C
        assert norms.min() < norm  # the small one is left as it was


# The quantile rule of adaptive clipping -----------------------------------------------------------


@pytest.mark.parametrize("clipping", ["server-adaptive", "client-adaptive"])
def test_adaptive_norm_follows_the_geometric_quantile_rule_exactly_without_noise(clipping):
    """sigma = 0: no count noise, so C_{t+1} = C_t exp(eta (f_t - q)), f_t the clipped fraction."""
    updates = _updates()
    norms = np.linalg.norm(updates, axis=1)
    for _, _, _, before, after, strategy in _rounds(clipping, updates, sigma=0.0, rounds=8):
        clipped = float(np.mean(norms > before))
        expected = before * math.exp(strategy.clip_norm_lr * (clipped - strategy.target_clipped_quantile))
        assert after == pytest.approx(expected, rel=1e-9)


def adaptive_norm_converges(clipping: str) -> bool:
    """Over many rounds C settles between the update norms around the target quantile (q = 0.5: the median, 3)."""
    np.random.seed(3)
    final = [after for *_, after, _ in _rounds(clipping, _updates(), rounds=40)][-10:]
    return all(1.5 <= c <= 6.0 for c in final)


@pytest.mark.parametrize("clipping", ["server-adaptive", "client-adaptive"])
def test_adaptive_norm_moves_to_the_target_quantile(clipping):
    assert adaptive_norm_converges(clipping)


# Broken variants: each check above must reject them ---------------------------------------------


def _no_noise(arrays, std):
    return None


def _no_clipping(monkeypatch):
    def keep(*args, **kwargs):  # leaves the update as it came, "not clipped"
        return False

    keep_inputs = keep

    for module in (dp_fixed_clipping, centraldp_mods):
        monkeypatch.setattr(module, "compute_clip_model_update", keep, raising=False)
    monkeypatch.setattr(centraldp_mods, "compute_adaptive_clip_model_update", keep)
    monkeypatch.setattr(dp_adaptive_clipping, "adaptive_clip_inputs_inplace", keep_inputs)


@pytest.mark.parametrize("clipping", MODES)
def test_the_noise_check_rejects_an_aggregate_without_noise(clipping, monkeypatch):
    monkeypatch.setattr(dp_fixed_clipping, "add_gaussian_noise_inplace", _no_noise)
    monkeypatch.setattr(server_privacy, "add_gaussian_noise_inplace", _no_noise)
    accepted, ratio = noise_check(clipping)
    assert not accepted and ratio < 0.5


@pytest.mark.parametrize("clipping", MODES)
def test_the_noise_check_rejects_unclipped_updates(clipping, monkeypatch):
    _no_clipping(monkeypatch)
    accepted, ratio = noise_check(clipping)
    assert not accepted and ratio > 2


def test_the_checks_reject_flowers_unfixed_adaptive_wrappers(monkeypatch):
    """Flower 1.42's own rule: C shrinks while most updates are clipped, and the noise follows the new C."""
    monkeypatch.setitem(server_privacy.WRAPPERS, "server-adaptive", DifferentialPrivacyServerSideAdaptiveClipping)
    monkeypatch.setitem(server_privacy.WRAPPERS, "client-adaptive", DifferentialPrivacyClientSideAdaptiveClipping)
    for clipping in ("server-adaptive", "client-adaptive"):
        assert not adaptive_norm_converges(clipping)
        assert not noise_check(clipping, rounds=40)[0]
