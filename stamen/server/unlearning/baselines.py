"""The yardsticks as federated rounds: retraining, fine-tuning, gradient ascent.

- ``retrain``: the run's rounds and strategy from the initial weights on the clients that
  stay, each training without its forgotten nodes (flag ``unlearn-retrain``). The gold
  standard, and the fallback when a holder of the forgotten data does not answer.
- ``finetune``: :func:`stamen.unlearn.baselines.finetune_rounds` rounds the same way, from the
  trained weights (catastrophic forgetting as unlearning).
- ``gradient-ascent``: one round on the clients holding data to forget only (flag
  ``unlearn-ascent``): each takes :data:`stamen.unlearn.baselines.ASCENT_STEPS` Adam steps up the
  loss on its forgotten nodes (:func:`stamen.unlearn.baselines.gradient_ascent`); the server averages
  the holders' models weighted by their forgotten nodes.
"""

from __future__ import annotations

from stamen.contract import protocol as p
from stamen.server.unlearning.base import MethodResult, UnlearningJob, UnlearningMethod


class Retrain(UnlearningMethod):
    """Retraining from scratch without the forgotten data."""

    name = "retrain"

    def run(self, job: UnlearningJob) -> MethodResult:
        rounds = job.config.num_server_rounds
        arrays = job.train(job.staying("retraining"), rounds, p.UNLEARN_RETRAIN, job.initial, "retraining")
        return MethodResult(arrays, {self.name: {"rounds": rounds}})


class Finetune(UnlearningMethod):
    """Fine-tuning the trained model on the remaining data."""

    name = "finetune"

    def run(self, job: UnlearningJob) -> MethodResult:
        # on use: torch, torch_geometric stay out of this module's import
        from stamen.unlearn.baselines import finetune_rounds

        rounds = finetune_rounds(job.config.num_server_rounds)
        arrays = job.train(job.staying("fine-tuning"), rounds, p.UNLEARN_RETRAIN, job.arrays, "fine-tuning")
        return MethodResult(arrays, {self.name: {"rounds": rounds}})


class GradientAscent(UnlearningMethod):
    """The holders ascend the loss on their forgotten nodes."""

    name = "gradient-ascent"

    def run(self, job: UnlearningJob) -> MethodResult:
        # on use: torch, torch_geometric stay out of this module's import
        from stamen.unlearn.baselines import ASCENT_STEPS

        holders = job.holders()
        arrays = job.train(holders, 1, p.UNLEARN_ASCENT, job.arrays, "gradient ascent")
        return MethodResult(arrays, {self.name: {"steps": ASCENT_STEPS, "holders": len(holders)}})
