"""What FedGTA's client part sends its server part (both name these constants)."""

# Client -> server, every round:
FEDGTA_UPLOAD = "fedgta-upload"  # ArrayRecord
LABEL_MOMENTS = "label-moments"  # (2 * moments * classes,): mixed moments of the propagated labels
SMOOTHING_CONFIDENCE = "smoothing-confidence"  # (1,): the local smoothing confidence
