"""What FedSage+'s client part and server part send each other (both name these constants)."""

# FedSage+'s generator phase before the classifier's rounds,
# ``fedsage-gen-rounds`` federated generator steps as query messages (QUERY in CONFIG names the kind; the
# math and the four hops of a step: model.py beside this file). Every reply also carries METRICS with the client's
# PARTITION_ID, which names it in the records the server forwards.
FEDSAGE_START_QUERY = "fedsage-gen-start"  # build the generator, reply the first step's request
FEDSAGE_CROSS_QUERY = "fedsage-gen-cross"  # request: FEDSAGE_REQUESTS; reply: FEDSAGE_GRADIENTS for every other client
FEDSAGE_STEP_QUERY = "fedsage-gen-step"  # request: FEDSAGE_GRADIENTS summed; reply: the next step's FEDSAGE_REQUEST
FEDSAGE_QUERIES = (FEDSAGE_START_QUERY, FEDSAGE_CROSS_QUERY, FEDSAGE_STEP_QUERY)
FEDSAGE_STEP = "fedsage-gen-step-index"  # CONFIG: the step (1..rounds) a message belongs to
FEDSAGE_LAST = "fedsage-gen-last"  # CONFIG (STEP_QUERY): true on the last step: keep the generator, request nothing
# ArrayRecord (client -> server): FEDSAGE_INPUT, FEDSAGE_SLOTS, f"{FEDSAGE_HEAD}{name}" fGen weights and the
# last layer's Gram matrices (stamen.algorithms.fedsage.cross.request_gram)
FEDSAGE_REQUEST = "fedsage-gen-request"
FEDSAGE_INPUT = "input"  # (m, hidden): fGen's input h_v = z_v + eps_v of the nodes with a local target
FEDSAGE_SLOTS = "slots"  # (m,): k_v, slots per node that the cross term matches
FEDSAGE_HEAD = "head."  # prefix of fGen's weights
# ArrayRecord (server -> client j): f"{partition}/{key}" of each FEDSAGE_REQUEST but j's
FEDSAGE_REQUESTS = "fedsage-gen-requests"
# ArrayRecord: j's reply f"{partition}/{name}", the parts of the gradient (stamen.algorithms.fedsage.cross.cross_parts);
# to client i: f"{name}" summed over j, but the parts named in FEDSAGE_CONCATENATED, concatenated (a sparse
# matrix's rows and their values: their sum is the sum of the rows)
FEDSAGE_GRADIENTS = "fedsage-gen-gradients"
FEDSAGE_CONCATENATED = ("rows", "row-values")  # stamen.algorithms.fedsage.cross.ROWS, ROW_VALUES
FEDSAGE_LOSS_D = "gen-loss-d"  # METRICS: the local degree loss of the step's forward pass
FEDSAGE_LOSS_F = "gen-loss-f"  # METRICS: the local feature-matching loss
FEDSAGE_CROSS_LOSS = "gen-cross-loss"  # METRICS (CROSS_QUERY reply): sum over the other clients of L_f^{i,j}
