r"""The one federated driver: a run's rounds, built from its config and a grid.

Every caller that trains a federation builds it here and nowhere else: the ServerApp
(:func:`stamen.server.app.serve`, on Flower's grid or the in-process one), the in-process engine,
every bench, the privacy audit, the unlearning experiment (:mod:`stamen.experiments.unlearn_experiment`)
and the unlearning methods' own rounds. :func:`build_driver` wires, from the validated
:class:`~stamen.contract.run_config.RunConfig`:

- the algorithm's strategy (its registry entry, :func:`stamen.server.algorithms.server_algorithm`),
  wrapped for client-level DP when ``privacy='client-dp'`` (:func:`stamen.server.privacy.private_setup`,
  which also fetches the initial weights the wrapper clips updates against);
- the grid, whose training exchanges run SecAgg+ when ``secure-aggregation=true``
  (:class:`stamen.server.secagg.SecureAggregationGrid`);
- ``min-clients``, lowered to the population of a grid whose population is fixed
  (``clients=``: an in-process grid, where nobody joins later), and ``round-timeout``;
- the server's random draws (client sampling, client-level DP noise), seeded from the
  run's seed (:func:`stamen.server.loop.seed_server_draws`) when the rounds start, or restored
  from a checkpoint's sampler state on a resume.

:meth:`Driver.run` then calls :func:`stamen.server.loop.run_rounds`, the round loop, with the
run's hooks (rows, checkpoints, the update history FedEraser replays). So the same config
and seed give the same rows whichever caller drives them.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flwr.app import ArrayRecord, ConfigRecord
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from stamen.common.heap import frozen_heap
from stamen.contract.figures import Row
from stamen.contract.run_config import RunConfig
from stamen.contract.tasks import TASKS
from stamen.server.algorithms import server_algorithm
from stamen.server.checkpoint import Checkpoint
from stamen.server.loop import RunHealth, run_rounds, seed_server_draws
from stamen.server.privacy import private_setup
from stamen.server.secagg import SecureAggregationGrid
from stamen.server.update_history import history_recorder

if TYPE_CHECKING:
    from stamen.unlearn.federaser import UpdateHistory


@dataclass
class Driver:
    """A run's federated engine, ready to run its rounds (build it with :func:`build_driver`).

    Attributes:
        config: the run config it was built from.
        grid: the grid the rounds use (wrapped for secure aggregation when asked).
        strategy: the algorithm's strategy (wrapped for client-level DP when asked).
        aggregates: whether the algorithm keeps a global model.
        min_clients: the fewest valid replies a round goes on with.
        initial: the weights round 1 sends (None: the clients build the seeded initial model).
        epsilon_after: the client-level DP epsilon after a number of rounds (None without it).
        seeded: whether :meth:`run` seeds the server's draws from the run's seed (the
            unlearning methods' rounds go on with the draws of the run they unlearn from).
    """

    config: RunConfig
    grid: Any
    strategy: Strategy
    aggregates: bool
    min_clients: int
    initial: ArrayRecord | None = None
    epsilon_after: Callable[[int], float] | None = None
    seeded: bool = True

    def run(
        self,
        on_row: Callable[[Row], None],
        *,
        rounds: int | None = None,
        resume: Checkpoint | None = None,
        on_checkpoint: Callable[[Checkpoint], None] | None = None,
        history: UpdateHistory | None = None,
        initial: ArrayRecord | None = None,
        train_config: ConfigRecord | None = None,
        health: RunHealth | None = None,
    ) -> ArrayRecord:
        """The rounds (``rounds``, default ``num-server-rounds``); returns the final global weights.

        ``resume`` continues from a checkpoint with its sampler state; ``history`` records every
        client's update; ``initial`` replaces the weights round 1 sends; ``train_config`` goes with
        every training message; ``health`` collects the clients' failures (see
        :func:`stamen.server.loop.run_rounds` for each).
        """
        if self.seeded:
            seed_server_draws(self.config.seed)
        if resume is not None and resume.random_state() is not None:
            random.setstate(resume.random_state())
        if history is not None:
            on_replies = history_recorder(history)
        else:
            on_replies = None
        with frozen_heap():  # what a rule's own gc.collect() scans: the objects made since the rounds began
            return run_rounds(
                self.grid,
                self.strategy,
                self.config.num_server_rounds if rounds is None else rounds,
                aggregates=self.aggregates,
                min_clients=self.min_clients,
                timeout=self.config.round_timeout,
                on_row=on_row,
                train_config=train_config,
                initial=initial if initial is not None else self.initial,
                resume=resume,
                on_checkpoint=on_checkpoint,
                on_replies=on_replies,
                pooling=TASKS[self.config.task].pooling,
                health=health,
            )


def build_driver(
    config: RunConfig,
    grid: Grid,
    *,
    clients: int | None = None,
    strategy_factory: Callable[[RunConfig], Strategy] | None = None,
    seeded: bool = True,
) -> Driver:
    """The run's engine over ``grid`` (see the module docstring for what it wires).

    ``clients``: the grid's fixed population, when it has one (in process); ``min-clients``
    is lowered to it. ``strategy_factory``: the algorithm's ``make_strategy`` by default.
    ``seeded=False``: the rounds go on with the server's draws as they stand.
    """
    algorithm = server_algorithm(config.algorithm)
    min_clients = config.min_clients if clients is None else min(config.min_clients, clients)
    setup = private_setup((strategy_factory or algorithm.make_strategy)(config), config, grid)
    return Driver(
        config=config,
        grid=SecureAggregationGrid(grid, config) if config.secure_aggregation else grid,
        strategy=setup.strategy,
        aggregates=algorithm.AGGREGATES,
        min_clients=min_clients,
        initial=setup.initial,
        epsilon_after=setup.epsilon_after,
        seeded=seeded,
    )
