"""FedProto: class prototypes shared instead of weights (Tan et al. 2022).

The personal models live in the clients' state, outside the checkpoint: not resumable.
"""

from stamen.contract.algorithms import AlgorithmSpec, Headline
from stamen.contract.keys import Section, ge, option

PERSONAL = Section(
    "personal", "personalised FL's options (algorithm='fedrep', 'ditto', 'fedproto')", after="local"
)  # shared with fedrep's and ditto's keys

SPEC = AlgorithmSpec(
    "fedproto",
    "FedProto, class prototypes shared instead of weights",
    "stamen.algorithms.fedproto.server",
    "stamen.algorithms.fedproto.client",
    headline=Headline.CLIENTS,
    resumable=False,
    keys=(
        option(
            "fedproto-lambda",
            1.0,
            "fedproto: weight of the mean squared distance to the global prototypes",
            bound=ge(0),
        ),
    ),
    section=PERSONAL,
)
