"""What FedLoG's client part and server part send each other (both name these constants)."""

# Client -> server, every round:
FEDLOG_UPLOAD = "fedlog-upload"  # ArrayRecord: the head-branch synthetic features and class proportions
SYNTHETIC_HEAD = "synthetic-head"  # (classes * num-proto, features), class-major
CLASS_PROPORTIONS = "class-proportions"  # (classes,): the client's share of training nodes per class
# Client -> server, first round only: the pretrained neighbour generator.
FEDLOG_GENERATOR = "fedlog-generator"  # ArrayRecord: the generator's state dict
# Server -> client, from the second round on:
FEDLOG_GLOBAL = "fedlog-global"  # ArrayRecord: the condensed global synthetic nodes
GLOBAL_FEATURES = "features"  # (classes * num-proto, features), class-major
GLOBAL_LABELS = "labels"  # (classes * num-proto,)
FEDLOG_GENERATORS = "fedlog-generators"  # ArrayRecord: f"{class}.{name}": the per-class generators' weights
