"""The floor's ServerApp: ``num-server-rounds`` rounds of weights to every client and back, averaged with NumPy.

The arrays have the shapes of the run's model (run config ``shapes``). The last log line, ``floor: N rounds, M
replies, S s in rounds, R s in round 1, I s importing``, tells the bench that every round had every client's reply,
how long the rounds took (timed as Stamen's ServerApp times its rounds: from sending to the replies aggregated), and
the longest a client process spent importing the run config's ``imports`` (``client_app``; 0 for none).
"""

import time
from logging import INFO

import numpy as np
from flwr.app import ArrayRecord, ConfigRecord, Context, Message, RecordDict
from flwr.common import log
from flwr.serverapp import Grid, ServerApp

app = ServerApp()


def _shapes(text: str) -> list[tuple[int, ...]]:
    return [tuple(int(d) for d in shape.split("x")) for shape in text.split(",") if shape]


@app.main()
def main(grid: Grid, context: Context) -> None:
    rounds = int(context.run_config["num-server-rounds"])
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(shape).astype(np.float32) for shape in _shapes(str(context.run_config["shapes"]))]
    clients = int(context.run_config["clients"])
    nodes = list(grid.get_node_ids())
    while len(nodes) < clients:  # the simulation registers its nodes as it starts
        time.sleep(0.05)
        nodes = list(grid.get_node_ids())
    replies_in_all, seconds, importing = 0, [], 0.0
    for server_round in range(1, rounds + 1):
        started = time.perf_counter()
        content = RecordDict({"arrays": ArrayRecord(weights), "config": ConfigRecord({"server-round": server_round})})
        messages = [Message(content=content, dst_node_id=node, message_type="train") for node in nodes]
        replies = [reply for reply in grid.send_and_receive(messages) if not reply.has_error()]
        replies_in_all += len(replies)
        received = [reply.content.array_records["arrays"].to_numpy_ndarrays() for reply in replies]
        importing = max([importing, *(float(r.content.metric_records["metrics"]["import-seconds"]) for r in replies)])
        weights = [np.mean(layer, axis=0) for layer in zip(*received)] if received else weights
        seconds.append(time.perf_counter() - started)
    first = seconds[0] if seconds else 0.0
    log(
        INFO,
        "floor: %d rounds, %d replies, %.3f s in rounds, %.3f s in round 1, %.3f s importing",
        rounds,
        replies_in_all,
        sum(seconds),
        first,
        importing,
    )
