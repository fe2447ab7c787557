"""FedAdam, FedYogi and FedAdagrad: adaptive steps on the server over the averaged update (Reddi et al. 2021;
Flower's FedOpt strategies). The three variants share this folder and the ``fedopt-*`` keys."""

from stamen.contract.algorithms import AlgorithmSpec
from stamen.contract.keys import Section, ge, option, within

SECTION = Section(
    "fedopt", "server-side adaptive optimisers (algorithm='fedadam', 'fedyogi', 'fedadagrad')", after="local"
)

KEYS = (
    option(
        "fedopt-eta", 0.0, "server step eta; 0: the algorithm's default (0.1 FedAdam, FedYogi, FedAdagrad)", bound=ge(0)
    ),
    option(
        "fedopt-beta-1",
        0.0,
        "first-moment decay (FedAdam, FedYogi; Flower's 0.9 made both diverge on Cora)",
        bound=within(0, 1, "[)"),
    ),
    option("fedopt-beta-2", 0.99, "second-moment decay (FedAdam, FedYogi)", bound=within(0, 1, "[)")),
    option(
        "fedopt-tau",
        0.0,
        "adaptivity tau added to the root of the second moment; 0: the algorithm's default (0.1 FedAdam, FedYogi; "
        "0.001 FedAdagrad)",
        bound=ge(0),
    ),
)
_NAMES = tuple(key.name for key in KEYS)

FEDADAM = AlgorithmSpec(
    "fedadam",
    "FedAdam, Adam steps on the server over the averaged update (Flower's FedAdam)",
    "stamen.algorithms.fedopt.server:make_fedadam",
    "stamen.algorithms.fedopt.client",
    privacy=("none", "dp-sgd"),
    resumable=False,
    unlearnable=True,
    any_task=True,
    keys=KEYS,
    section=SECTION,
)
FEDYOGI = AlgorithmSpec(
    "fedyogi",
    "FedYogi, Yogi steps on the server over the averaged update (Flower's FedYogi)",
    "stamen.algorithms.fedopt.server:make_fedyogi",
    "stamen.algorithms.fedopt.client",
    privacy=("none", "dp-sgd"),
    options=_NAMES,
    resumable=False,
    unlearnable=True,
    any_task=True,
)
FEDADAGRAD = AlgorithmSpec(
    "fedadagrad",
    "FedAdagrad, Adagrad steps on the server over the averaged update (Flower's FedAdagrad)",
    "stamen.algorithms.fedopt.server:make_fedadagrad",
    "stamen.algorithms.fedopt.client",
    privacy=("none", "dp-sgd"),
    options=("fedopt-eta", "fedopt-tau"),
    resumable=False,
    unlearnable=True,
    any_task=True,
)
