"""Ditto: FedAvg plus a personal model held near the global one (Li et al. 2021).

The personal model lives in the clients' state, outside the checkpoint: not resumable.
"""

from stamen.contract.algorithms import AlgorithmSpec, Headline
from stamen.contract.keys import Section, ge, option

PERSONAL = Section(
    "personal", "personalised FL's options (algorithm='fedrep', 'ditto', 'fedproto')", after="local"
)  # shared with fedrep's and fedproto's keys

SPEC = AlgorithmSpec(
    "ditto",
    "Ditto, FedAvg plus a personal model held near the global one",
    "stamen.algorithms.ditto.server",
    "stamen.algorithms.ditto.client",
    headline=Headline.CLIENTS,
    resumable=False,
    keys=(
        option("ditto-lambda", 1.0, "ditto: pull of the personal model to the global one", bound=ge(0)),
        option("ditto-personal-epochs", 1, "ditto: full-batch steps on the personal model per round", bound=ge(1)),
    ),
    section=PERSONAL,
)
