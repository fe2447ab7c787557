"""FedSage with local NeighGen, and FedSage+ with cross-client generator training (Zhang et al. 2021).

Both variants share this folder: the classifier's FedAvg on subgraphs mended by a generator
(:mod:`stamen.algorithms.fedsage.model`), and FedSage+'s federated generator phase
(:mod:`stamen.algorithms.fedsage.cross`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

from stamen.contract.algorithms import AlgorithmSpec
from stamen.contract.keys import Section, ge, gt, option, within

if TYPE_CHECKING:
    from stamen.contract.run_config import RunConfig


class FedSageSchedule(StrEnum):
    """When fedsage+'s federated generator steps happen (``fedsage-schedule``;
    :mod:`stamen.algorithms.fedsage.server`)."""

    PAPER = "paper"  # step t just before classifier round t, for t <= fedsage-gen-rounds (the reference's)
    PRETRAIN = "pretrain"  # all steps before the classifier's first round (Stamen's earlier schedule)


FEDSAGE_SCHEDULES = {
    FedSageSchedule.PAPER.value: "generator step t before classifier round t, for the first fedsage-gen-rounds "
    "rounds (as the reference code)",
    FedSageSchedule.PRETRAIN.value: "every generator step before the classifier's first round",
}

SECTION = Section(
    "fedsage",
    "FedSage's options (algorithm='fedsage-local', 'fedsage+'): its missing-neighbour generator",
    after="local",
)


def check_schedule(config: RunConfig) -> None:
    """``fedsage-schedule='paper'`` takes one generator step per round: ``fedsage-gen-rounds <= num-server-rounds``."""
    rounds = config.option("fedsage-gen-rounds")
    if config.option("fedsage-schedule") == FedSageSchedule.PAPER and rounds > config.num_server_rounds:
        raise ValueError(
            f"fedsage-schedule='paper' takes one generator step in each of the first fedsage-gen-rounds rounds, "
            f"and fedsage-gen-rounds={rounds} > num-server-rounds={config.num_server_rounds}; "
            "lower fedsage-gen-rounds, or use fedsage-schedule='pretrain'"
        )


LOCAL_SPEC = AlgorithmSpec(
    "fedsage-local",
    "FedSage with local NeighGen: classifier FedAvg on subgraphs mended with generated neighbours "
    "(Zhang et al. 2021; use model='sage')",
    "stamen.algorithms.fedsage.server",
    "stamen.algorithms.fedsage.client",
    resumable=False,
    keys=(
        option(
            "fedsage-hidden-portion",
            0.5,
            "share of a client's nodes hidden to train its generator",
            bound=within(0, 1, "()"),
        ),
        option("fedsage-max-pred", 5, "most neighbours generated per node", bound=ge(1)),
        option("fedsage-gen-epochs", 100, "generator's training epochs (first participation)", bound=ge(0)),
        option("fedsage-gen-hidden", 64, "generator's hidden width", bound=ge(1)),
        option("fedsage-gen-lr", 0.01, "generator's Adam step", bound=gt(0)),
    ),
    section=SECTION,
)

PLUS_SPEC = AlgorithmSpec(
    "fedsage+",
    "FedSage+: fedsage-local whose generators also learn from the other clients' subgraphs "
    "(cross-client feature matching; Zhang et al. 2021; use model='sage')",
    "stamen.algorithms.fedsage.server:make_plus_strategy",
    "stamen.algorithms.fedsage.client:PLUS_PART",
    options=(*(key.name for key in LOCAL_SPEC.keys), "fedsage-gen-rounds", "fedsage-cross-weight", "fedsage-schedule"),
    resumable=False,
    keys=(
        option(
            "fedsage-gen-rounds",
            10,
            "fedsage+: federated generator steps (0: local NeighGen); when: fedsage-schedule",
            bound=ge(0),
        ),
        option("fedsage-schedule", "paper", "fedsage+: when the generator steps happen", choices=FEDSAGE_SCHEDULES),
        option(
            "fedsage-cross-weight",
            1.0,
            "fedsage+: weight alpha of the cross-client feature-matching loss (0: local NeighGen)",
            bound=ge(0),
        ),
    ),
    section=SECTION,
    check=check_schedule,
)
