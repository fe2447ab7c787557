"""What FedProto's client part and server part send each other: prototypes instead of weights."""

# Client -> server, every round:
FEDPROTO_UPLOAD = "fedproto-upload"  # ArrayRecord: the client's class prototypes and class counts
# Server -> client, from the second round on (and with the final evaluation):
FEDPROTO_GLOBAL = "fedproto-global"  # ArrayRecord: the global prototypes and their class counts
PROTOTYPES = "prototypes"  # (classes, embedding): mean embedding per class; zero rows where the count is 0
PROTOTYPE_COUNTS = "class-counts"  # (classes,): training nodes behind each prototype
