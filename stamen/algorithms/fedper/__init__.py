"""FedPer and FedRep: the encoder averaged, each client's head kept local (FedRep trains the head first).

Both variants share this folder: the server part (FedAvg over the encoder) and the client's
:class:`~stamen.algorithms.fedper.client.SharedEncoderClient`. The personal parts live in the clients'
state, outside the checkpoint: not resumable.
"""

from stamen.contract.algorithms import AlgorithmSpec
from stamen.contract.keys import Section, ge, option

PERSONAL = Section(
    "personal", "personalised FL's options (algorithm='fedrep', 'ditto', 'fedproto')", after="local"
)  # the section ditto's and fedproto's keys join

SPEC = AlgorithmSpec(
    "fedper",
    "FedPer, the encoder averaged, each client's head kept local",
    "stamen.algorithms.fedper.server",
    "stamen.algorithms.fedper.client",
    resumable=False,
    shares_encoder=True,
)

FEDREP_SPEC = AlgorithmSpec(
    "fedrep",
    "FedRep, local head trained first, then the shared encoder (averaged)",
    "stamen.algorithms.fedper.server",
    "stamen.algorithms.fedper.fedrep",
    resumable=False,
    shares_encoder=True,
    keys=(option("rep-head-epochs", 10, "fedrep: steps on the local head (encoder frozen) per round", bound=ge(0)),),
    section=PERSONAL,
)
