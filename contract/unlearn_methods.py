"""The unlearning methods a federated run may apply after training (``unlearn-method``).

One entry per method; the server runs it (:mod:`server.unlearning`), the run config
offers and checks it from here. ``replays_history``: the method replays every
round's client updates, recorded while training, so a run resumed from a checkpoint
(which lacks the updates before it) cannot use it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UnlearnMethodSpec:
    name: str
    help: str
    replays_history: bool = False


UNLEARN_METHOD_SPECS: dict[str, UnlearnMethodSpec] = {
    spec.name: spec
    for spec in (
        UnlearnMethodSpec("wash", "closed-form edit of the head from the clients' key statistics"),
        UnlearnMethodSpec("laf", "label-agnostic forgetting as federated rounds, at most 10% of the training rounds"),
        UnlearnMethodSpec("laf+r", "laf, then one federated round that repairs the head on the remaining data"),
        UnlearnMethodSpec(
            "laf+ft",
            "laf, then a tenth of the training rounds of FedAvg on the clients that stay, without the forgotten nodes",
        ),
        UnlearnMethodSpec(
            "federaser",
            "the server records every client's update during training, then replays them with one calibration round "
            "per 5 rounds; not with resume-from",
            replays_history=True,
        ),
        UnlearnMethodSpec("finetune", "rounds of FedAvg on the remaining data, starting from the trained model"),
        UnlearnMethodSpec(
            "gradient-ascent", "the holders ascend the loss on their forgotten nodes for a few steps, in one round"
        ),
        UnlearnMethodSpec("retrain", "retrain from scratch without the forgotten data"),
    )
}
# Every method but federaser retrains when a client holding data to forget does not answer.
