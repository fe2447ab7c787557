"""``federaser`` over messages: record the clients' updates in training, replay them without the forgotten data.

While training, :func:`stamen.server.update_history.history_recorder` (the round loop's ``on_replies`` hook) adds every
client's update to an :class:`stamen.unlearn.federaser.UpdateHistory`. To forget, one calibration
round per window on the clients that stay, each trained without its forgotten nodes (flag
``unlearn-retrain``), each client's update rescaled to its recorded step length
(:func:`stamen.unlearn.federaser.replay_step`). It needs nothing from a client that is gone, so it
never falls back.
"""

from __future__ import annotations

from logging import INFO

from flwr.app import ArrayRecord, ConfigRecord
from flwr.common import log

from stamen.contract import protocol as p
from stamen.server.loop import exchange
from stamen.server.unlearning.base import MethodResult, UnlearningJob, UnlearningMethod
from stamen.server.unlearning.rollcall import SubGrid


class FedEraser(UnlearningMethod):
    """Replay of the recorded training with calibration rounds on the clients that stay."""

    name = "federaser"

    def run(self, job: UnlearningJob) -> MethodResult:
        # on use: torch stays out of this module's import
        from stamen.unlearn.federaser import check_clients, replay_step

        history = job.history
        if history is None:
            raise RuntimeError("unlearning: federaser needs the clients' updates recorded during training; none were")
        nodes = job.staying("federaser")
        try:
            check_clients(history, [job.partitions[node] for node in nodes])
        except ValueError as error:
            raise RuntimeError(f"unlearning: {error}") from None
        grid = SubGrid(job.grid, nodes)
        strategy = job.strategy_factory(job.config)
        arrays = ArrayRecord(history.initial)
        count = len(history.windows)
        min_clients = min(job.config.min_clients, len(nodes))
        for index, window in enumerate(history.windows):
            train = ConfigRecord({p.UNLEARN_RETRAIN: str(job.request)})
            messages = strategy.configure_train(index + 1, arrays, train, grid)
            what = f"federaser calibration {index + 1}/{count}"
            replies = exchange(grid, messages, job.timeout, min_clients, what, health=job.health)
            calibrated = (
                (
                    int(reply.content[p.METRICS][p.PARTITION_ID]),
                    reply.content[p.ARRAYS].to_torch_state_dict(),
                    int(reply.content[p.METRICS][p.NUM_EXAMPLES]),
                )
                for reply in replies
            )
            step = replay_step(arrays.to_torch_state_dict(), calibrated, window)
            if step is not None:
                arrays = ArrayRecord(step)
            log(INFO, "stamen: federaser calibration round %d/%d", index + 1, count)
        return MethodResult(arrays, {"federaser": {"calibration_rounds": count}})
