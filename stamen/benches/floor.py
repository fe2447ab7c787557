"""The Flower floor of ``stamen bench sim``: what Flower's simulation alone costs for a run's rounds.

:data:`FLOOR_APP` is a Flower app of its own (``floor_app/``: a ``pyproject.toml`` and the
``floorapp`` package, which imports Flower and NumPy only): each round its ServerApp sends
every client the arrays of the run's model, each client returns them unchanged, and the
server averages them. :func:`floor_run` runs it the way ``stamen run`` runs Stamen's app: a
simulation SuperLink of its own (:class:`stamen.simulations.flower.LocalSuperLink`), ``flwr run
--stream`` with the same federation config (clients, client resources), the same Flower and
Ray environment (:func:`stamen.simulations.flower.flower_environment`, the Ray cluster of
``--ray-address`` too), timed over the same span as a Stamen run's ``total_wall_seconds``:
from before the SuperLink starts until ``flwr run`` returns. Stamen's time over the floor's is
what Stamen adds to Flower (loading data, models, training, evaluation, its records).

The weights' shapes come from the Stamen run's own checkpoint (:func:`model_shapes`), so the
floor moves as many bytes as the run did; an algorithm without a global model has no floor.

**The library floor** (``imports``=:data:`LIBRARIES`): the same app whose clients first import
PyTorch and PyG, at their first message, as any PyG app's ClientApp must before it can train.
Against it, Stamen's Flower run shows what Stamen's own code adds (data, model, training,
evaluation, records); the floor's difference from it is the libraries' import in round 1, a
cost no app that trains a GNN with them avoids.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from stamen.simulations.cluster import cluster_environment
from stamen.simulations.flower import LocalSuperLink, flower_home, flwr_run

FLOOR_APP = Path(__file__).resolve().parent / "floor_app"
# the ServerApp's last line: "floor: N rounds, M replies, S s in rounds, R s in round 1, I s importing"
DONE = "floor: "
LIBRARIES = "torch,torch_geometric"  # what every Stamen client process imports before its first reply


def model_shapes(run_dir: Path) -> str:
    """The global model's array shapes in ``run_dir``'s checkpoint as the floor's ``shapes`` (``""``: none)."""
    # on use: flwr, numpy stay out of this module's import
    from stamen.server.checkpoint import load_checkpoint

    arrays = load_checkpoint(run_dir).arrays
    return ",".join("x".join(str(d) for d in arrays[name].shape) or "1" for name in arrays)


def floor_run(
    shapes: str, rounds: int, federation: dict[str, object], ray_address: str = "", imports: str = ""
) -> dict[str, float]:
    """The floor app for ``rounds`` rounds over ``federation`` (Flower's federation config); its wall time.
    ``imports``: modules each client process imports at its first message (:data:`LIBRARIES`: the library floor).

    Raises:
        RuntimeError: the floor did not finish every round with every client (the log's tail says why).
    """
    clients = int(federation["num-supernodes"])
    config = {"num-server-rounds": rounds, "shapes": shapes, "clients": clients, "imports": imports}
    env = cluster_environment(ray_address, "")
    with flower_home() as home:
        log = home / "floor.log"
        started = time.perf_counter()
        with LocalSuperLink(home, extra=env):
            code = flwr_run(home, config, federation, log=log, extra=env, app=FLOOR_APP)
        wall = time.perf_counter() - started
        text = log.read_text() if log.is_file() else ""
        expected = f"{DONE}{rounds} rounds, {rounds * clients} replies, "
        figures = r"([0-9.]+) s in rounds, ([0-9.]+) s in round 1, ([0-9.]+) s importing"
        done = re.search(re.escape(expected) + figures, text)
        if code != 0 or done is None:
            tail = " | ".join(text.strip().splitlines()[-3:])
            raise RuntimeError(f"the Flower floor did not finish ({expected!r} not logged, flwr exit {code}): {tail}")
    rounds_seconds, first, importing = float(done[1]), float(done[2]), float(done[3])
    return {
        "wall_seconds": wall,
        "rounds_seconds": rounds_seconds,  # the ServerApp's rounds, as Stamen's rows time theirs
        "first_round_seconds": first,
        "start_up_seconds": wall - rounds_seconds,  # SuperLink, simulation, ServerApp start and end
        "seconds_per_later_round": (rounds_seconds - first) / max(rounds - 1, 1),
        "import_seconds": importing,  # the longest a client process took to import ``imports`` (0: none)
    }
