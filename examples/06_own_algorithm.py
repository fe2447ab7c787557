# %% [markdown]
# # Your own FL method as a plug-in: server-side Nesterov momentum over FedAvg
#
# A spec naming its parts by module path, with its own keys. Installed as a package whose pyproject.toml names
# it (`[project.entry-points."stamen.algorithms"] fednag = "my_module:ALGORITHM"`), every engine loads it
# (docs/extending.md); run as a script, it registers from Python and trains on the in-process engine.

# %%
import os
from pathlib import Path

from flwr.app import ArrayRecord

import stamen
from stamen.contract.keys import ge, within
from stamen.server.averaging import WeightedAverage
from stamen.server.strategy_options import strategy_options


class NesterovAverage(WeightedAverage):
    """v = beta v + (w_prev - avg); w = w_prev - lr (beta v + (w_prev - avg)). beta = 0, lr = 1 is FedAvg."""

    def __init__(self, beta: float, lr: float, **fedavg) -> None:
        super().__init__(**fedavg)
        self.beta, self.lr, self.previous, self.velocity = beta, lr, None, None

    def aggregate_train(self, server_round, replies):
        average, metrics = super().aggregate_train(server_round, replies)
        if average is None:
            return None, metrics
        mean = average.to_torch_state_dict()
        if self.previous is not None:  # round 1 sends no weights (every client builds the seeded model)
            step = {name: self.previous[name] - mean[name] for name in mean}
            self.velocity = {n: self.beta * self.velocity[n] + step[n] for n in step} if self.velocity else step
            mean = {n: self.previous[n] - self.lr * (self.beta * self.velocity[n] + step[n]) for n in mean}
        self.previous = mean
        return ArrayRecord(mean), metrics


def make_strategy(config):
    return NesterovAverage(config.option("fednag-momentum"), config.option("fednag-lr"), **strategy_options(config))


ALGORITHM = stamen.AlgorithmSpec(
    "fednag",
    "FedAvg with server-side Nesterov momentum",
    server=f"{__name__}:make_strategy",
    client="stamen.client.local_step",  # the clients take FedAvg's local step
    any_task=True,
    keys=(
        stamen.option("fednag-momentum", 0.5, "server momentum beta", bound=within(0, 1, "[)")),
        stamen.option("fednag-lr", 1.0, "server learning rate", bound=ge(0)),
    ),
)

# %%
if __name__ == "__main__":
    SMALL = os.environ.get("STAMEN_EXAMPLES_SMALL", "") == "1"
    OUT = Path(os.environ.get("STAMEN_EXAMPLES_OUT", "examples-out")) / "own"
    stamen.register_algorithm(ALGORITHM)
    size = {"csbm-nodes": 300, "num-server-rounds": 3} if SMALL else {"csbm-nodes": 1500, "num-server-rounds": 30}
    run = stamen.run({"algorithm": "fednag", **size}, clients=3, out=OUT, run_name="fednag", overwrite=True)
    print(run.to_pandas()[["round", "global_test_acc", "train_loss"]])
