"""FedLoG: head/tail prototype branches and global synthetic nodes (Kim et al., ICLR 2025; docs/algorithms.md)."""

from stamen.contract.algorithms import AlgorithmSpec, Headline
from stamen.contract.keys import Section, ge, gt, option, within

SECTION = Section(
    "fedlog", "FedLoG's options (algorithm='fedlog'); local-epochs and weight-decay are shared", after="local"
)

SPEC = AlgorithmSpec(
    "fedlog",
    "FedLoG, prototype branches and global synthetic nodes (docs/algorithms.md)",
    "stamen.algorithms.fedlog.server",
    "stamen.algorithms.fedlog.client",
    headline=Headline.CLIENTS,  # its authors evaluate the clients' models only
    keys=(
        option("fedlog-lr", 0.001, "FedLoG's Adam step (weights also take weight-decay)", bound=gt(0)),
        option("fedlog-hidden", 128, "GraphSAGE hidden width", bound=ge(1)),
        option("fedlog-embedding", 64, "embedding width", bound=ge(1)),
        option("fedlog-batch-size", 64, "mini-batch of training nodes", bound=ge(1)),
        option("fedlog-num-proto", 20, "synthetic nodes per class and branch", bound=ge(1)),
        option("fedlog-gamma", 3.0, "degree gate sigmoid(degree - (gamma + 1))"),
        option("fedlog-beta-metric", 1.0, "loss weight of the prototype loss", bound=ge(0)),
        option("fedlog-beta-norm", 1.0, "loss weight of the synthetic-feature norm", bound=ge(0)),
        option("fedlog-beta-cd", 1.0, "loss weight on the global synthetic data (0: the ablation)", bound=ge(0)),
        option("fedlog-lambda-step", 0.001, "adaptive feature scaling: lambda's step", bound=ge(0)),
        option(
            "fedlog-lambda-threshold",
            0.8,
            "lambda moves up where accuracy on a class's synthetic nodes exceeds this",
            bound=within(0, 1),
        ),
        option("fedlog-warmup-epochs", 100, "first participation: cross-entropy warm-up epochs", bound=ge(0)),
        option("fedlog-warmup-patience", 10, "warm-up early stopping on validation: patience", bound=ge(0)),
        option("fedlog-generator-epochs", 100, "neighbour generator's pretraining epochs", bound=ge(0)),
        option("fedlog-generator-hidden", 256, "neighbour generator's hidden width", bound=ge(1)),
    ),
    section=SECTION,
)
