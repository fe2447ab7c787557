"""FedLoG: head/tail prototype branches and global synthetic nodes (Kim et al., ICLR 2025; docs/algorithms.md)."""

from enum import StrEnum

from stamen.contract.algorithms import AlgorithmSpec, Headline
from stamen.contract.keys import Section, ge, gt, option, within


class FedLoGWarmupStop(StrEnum):
    """Which nodes FedLoG's warm-up early-stops on (``fedlog-warmup-stop``; :mod:`stamen.models.fedlog_training`)."""

    VALIDATION = "validation"  # the best validation epoch's weights (Stamen's)
    TEST_MASK = "test-mask"  # the authors' code: stops on test accuracy; leaks test labels into model selection


FEDLOG_WARMUP_STOPS = {
    FedLoGWarmupStop.VALIDATION.value: "stop after fedlog-warmup-patience epochs without a validation accuracy at or "
    "above the best, keep the best validation epoch's weights (the latest of ties)",
    FedLoGWarmupStop.TEST_MASK.value: "the authors' code; leaks test labels into model selection: the same rule on "
    "the test accuracy, keeping the last epoch's weights",
}


class FedLoGGenerators(StrEnum):
    """Which generator gives a global synthetic node its neighbour (``fedlog-class-generators``)."""

    SERVER = "server"  # the server's per-class averages of the clients' trained generators (the paper's)
    UNTRAINED = "untrained"  # the authors' code: per-class generators that keep their seeded initial weights


FEDLOG_GENERATORS = {
    FedLoGGenerators.SERVER.value: "the server's per-class averages of the clients' pretrained generators (the paper)",
    FedLoGGenerators.UNTRAINED.value: "the authors' code: per-class generators with seeded initial weights, never "
    "trained (the server's averages are not read)",
}


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
        option("fedlog-warmup-stop", "validation", "what the warm-up early-stops on", choices=FEDLOG_WARMUP_STOPS),
        option(
            "fedlog-class-generators",
            "server",
            "what gives a global synthetic node its neighbour",
            choices=FEDLOG_GENERATORS,
        ),
    ),
    notes_when=(
        (
            "fedlog-warmup-stop",
            FedLoGWarmupStop.TEST_MASK.value,
            "fedlog-warmup-stop='test-mask' (the authors' code): each client's warm-up stopped on its test "
            "accuracy, so test labels took part in model selection and the test figures are not held out",
        ),
    ),
    section=SECTION,
)
