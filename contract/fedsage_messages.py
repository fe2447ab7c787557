"""Names of FedSage+'s generator-phase messages (server/fedsage.py <-> client/fedsage.py).

Before the classifier's rounds the server drives ``fedsage-gen-rounds`` federated
generator steps with Flower *query* messages (:data:`contract.protocol.QUERY` in the
``config`` record names the kind); the math and the four hops of a step are in
:mod:`models.fedsage`. Every reply also carries the ``metrics`` record with the
client's ``partition-id``, which names it in the records the server forwards.
"""

START_QUERY = "fedsage-gen-start"  # build the generator, reply the first step's request
CROSS_QUERY = "fedsage-gen-cross"  # request: REQUESTS; reply: GRADIENTS for every other client
STEP_QUERY = "fedsage-gen-step"  # request: GRADIENTS summed; reply: the next step's REQUEST (none after the last)
QUERIES = (START_QUERY, CROSS_QUERY, STEP_QUERY)

STEP = "fedsage-gen-step-index"  # CONFIG: the step (1..rounds) a message belongs to
LAST = "fedsage-gen-last"  # CONFIG (STEP_QUERY): true on the last step: keep the generator, request nothing

REQUEST = "fedsage-gen-request"  # ArrayRecord (client -> server): INPUT, SLOTS, f"{HEAD}{name}" fGen weights
INPUT = "input"  # (m, hidden): fGen's input h_v = z_v + eps_v of the nodes with a local target
SLOTS = "slots"  # (m,): k_v, slots per node that the cross term matches
HEAD = "head."  # prefix of fGen's weights

REQUESTS = "fedsage-gen-requests"  # ArrayRecord (server -> client j): f"{partition}/{key}" of each REQUEST but j's
GRADIENTS = "fedsage-gen-gradients"  # ArrayRecord: j's reply f"{partition}/{name}"; to client i: f"{name}" summed

LOSS_D = "gen-loss-d"  # METRICS: the local degree loss of the step's forward pass
LOSS_F = "gen-loss-f"  # METRICS: the local feature-matching loss
CROSS_LOSS = "gen-cross-loss"  # METRICS (CROSS_QUERY reply): sum over the other clients of L_f^{i,j}
