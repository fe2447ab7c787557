"""The unlearning methods a federated run may apply after training (``unlearn-method``).

One entry per method; the server runs it (:mod:`stamen.server.unlearning`), the run config
offers and checks it from here, and what the method needs is read from here alone:

- ``replays_history``: the method replays every round's client updates, recorded while
  training (a run records them only when such a method is asked for), so a run resumed
  from a checkpoint (which lacks the updates before it) cannot use it;
- ``needs_holders``: it needs every client that holds data to forget (their statistics,
  their forget terms); when one of them does not answer the roll call, the server
  retrains instead;
- ``time_budget``: the share of retraining's wall time the method aims to stay within
  (its target in the unlearning experiment, ``stamen bench unlearn``), or None.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UnlearnMethodSpec:
    name: str
    help: str
    replays_history: bool = False
    needs_holders: bool = True
    time_budget: float | None = None


UNLEARN_METHOD_SPECS: dict[str, UnlearnMethodSpec] = {
    spec.name: spec
    for spec in (
        UnlearnMethodSpec("wash", "closed-form edit of the head from the clients' key statistics", time_budget=0.01),
        UnlearnMethodSpec(
            "laf", "label-agnostic forgetting as federated rounds, at most 10% of the training rounds", time_budget=0.2
        ),
        UnlearnMethodSpec(
            "laf+r", "laf, then one federated round that repairs the head on the remaining data", time_budget=0.2
        ),
        UnlearnMethodSpec(
            "laf+ft",
            "laf, then a tenth of the training rounds of FedAvg on the clients that stay, without the forgotten nodes",
            time_budget=0.2,
        ),
        UnlearnMethodSpec(
            "federaser",
            "the server records every client's update during training, then replays them with one calibration round "
            "per 5 rounds; not with resume-from",
            replays_history=True,
            needs_holders=False,
            time_budget=0.2,
        ),
        UnlearnMethodSpec(
            "finetune", "rounds of FedAvg on the remaining data, starting from the trained model", needs_holders=False
        ),
        UnlearnMethodSpec(
            "gradient-ascent", "the holders ascend the loss on their forgotten nodes for a few steps, in one round"
        ),
        UnlearnMethodSpec("retrain", "retrain from scratch without the forgotten data", needs_holders=False),
    )
}
# Every method but federaser retrains when a client holding data to forget does not answer.
