"""``laf``, ``laf+r`` and ``laf+ft`` as federated rounds (label-agnostic forgetting, :mod:`stamen.unlearn.laf`).

``laf``: :func:`laf_rounds` rounds of the run's strategy on every answering client, each
training message flagged ``unlearn-laf``: a client runs one LAF alternation on its graph as
trained (:func:`stamen.client.unlearning.laf_round`; only the clients holding data to forget have
forget terms), the server averages the encoders (the head stays frozen).
``laf+r`` follows with one round of head repair on the clients that stay (each fits the head
alone on its remaining labelled data, :func:`stamen.unlearn.laf.repair_head`; the heads are averaged);
``laf+ft`` with :func:`stamen.unlearn.baselines.finetune_rounds` FedAvg rounds on the clients that
stay, each without its forgotten nodes.
"""

from __future__ import annotations

from stamen.contract import protocol as p
from stamen.server.unlearning.base import MethodResult, UnlearningJob, UnlearningMethod

REPAIR_ROUNDS = 1


def laf_rounds(training_rounds: int) -> int:
    """Federated LAF rounds, one alternation each: as many as in-process LAF's steps, at most 10% of
    the training rounds (at least one)."""
    # on use: torch, torch_geometric stay out of this module's import
    from stamen.unlearn.laf import LAFConfig

    return max(1, min(LAFConfig().steps, training_rounds // 10))


class LAF(UnlearningMethod):
    """Label-agnostic forgetting of the encoder, one alternation per round."""

    name = "laf"

    def run(self, job: UnlearningJob) -> MethodResult:
        rounds = laf_rounds(job.config.num_server_rounds)
        arrays = job.train(job.answering(), rounds, p.UNLEARN_LAF, job.arrays, "LAF")
        return MethodResult(arrays, {"laf": {"rounds": rounds}})


class LAFRepair(UnlearningMethod):
    """LAF, then a round of head repair on the remaining data."""

    name = "laf+r"

    def run(self, job: UnlearningJob) -> MethodResult:
        result = LAF().run(job)
        nodes = job.staying("head repair")
        arrays = job.train(nodes, REPAIR_ROUNDS, p.UNLEARN_REPAIR, result.arrays, "head repair")
        return MethodResult(arrays, {**result.info, "repair": {"rounds": REPAIR_ROUNDS}})


class LAFFinetune(UnlearningMethod):
    """LAF, then fine-tuning rounds on the remaining data."""

    name = "laf+ft"

    def run(self, job: UnlearningJob) -> MethodResult:
        # on use: torch, torch_geometric stay out of this module's import
        from stamen.unlearn.baselines import finetune_rounds

        result = LAF().run(job)
        tuning = finetune_rounds(job.config.num_server_rounds)
        arrays = job.train(job.staying("fine-tuning"), tuning, p.UNLEARN_RETRAIN, result.arrays, "fine-tuning")
        return MethodResult(arrays, {**result.info, "finetune": {"rounds": tuning}})
