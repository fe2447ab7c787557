"""What FED-PUB's client part sends its server part (both name these constants)."""

# Client -> server, every round:
FEDPUB_UPLOAD = "fedpub-upload"  # ArrayRecord
FUNCTIONAL_EMBEDDING = "functional-embedding"  # (hidden,): the model's mean output on the seeded proxy graph
