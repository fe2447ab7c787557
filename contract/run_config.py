"""The typed run configuration shared by the ServerApp, the ClientApp and the CLI.

Flower hands both apps the run config as a flat ``{key: value}`` mapping (the
``[tool.flwr.app.config]`` table of ``pyproject.toml`` with the user's overrides).
:meth:`RunConfig.from_flower` checks every value's type and range once and gives a
frozen object whose attribute names are the keys with ``-`` turned into ``_``.
The defaults below are the ones in ``pyproject.toml`` (a test keeps them equal).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contract.requests import is_request
from models.names import check_decoupled


@dataclass(frozen=True)
class RunConfig:
    """Every run-config key of the Stamen app (see the README's table for meanings)."""

    # what to train
    algorithm: str = "fedavg"
    num_server_rounds: int = 100
    # data
    dataset: str = "csbm"
    data_root: str = ""
    partitioner: str = "louvain"
    dirichlet_alpha: float = 0.5
    train_frac: float = 0.6
    val_frac: float = 0.2
    new_client: bool = False
    seed: int = 0
    csbm_nodes: int = 3000
    csbm_classes: int = 7
    csbm_degree: float = 8.0
    csbm_homophily: float = 0.8
    csbm_features: int = 64
    csbm_signal: float = 1.0
    # evaluation settings of local generalization (graphs/settings.py)
    unseen_node_frac: float = 0.0
    missing_classes: int = 0
    # model
    model: str = "gcn"
    hidden: int = 64
    num_layers: int = 2
    dropout: float = 0.5
    # local training
    local_epochs: int = 1
    lr: float = 0.01
    weight_decay: float = 5e-4
    proximal_mu: float = 0.01
    keep_optimizer_state: bool = True
    device: str = "auto"
    # FedLoG (client/fedlog.py, server/fedlog.py); local-epochs and weight-decay are shared
    fedlog_lr: float = 0.001
    fedlog_hidden: int = 128
    fedlog_embedding: int = 64
    fedlog_batch_size: int = 64
    fedlog_num_proto: int = 20
    fedlog_gamma: float = 3.0
    fedlog_beta_metric: float = 1.0
    fedlog_beta_norm: float = 1.0
    fedlog_beta_cd: float = 1.0
    fedlog_lambda_step: float = 0.001
    fedlog_lambda_threshold: float = 0.8
    fedlog_warmup_epochs: int = 100
    fedlog_warmup_patience: int = 10
    fedlog_generator_epochs: int = 100
    fedlog_generator_hidden: int = 256
    # federated label-flip certificates after training (empty budgets: off)
    certify_budgets: str = ""
    certify_arch: str = "gcn"
    certify_c: float = 0.01
    certify_labels_per_class: int = 10
    certify_targets: int = 20
    certify_time_limit: float = 60.0
    # federated unlearning after training (empty request: off)
    unlearn_request: str = ""
    unlearn_method: str = "wash"
    # federation
    fraction_train: float = 1.0
    min_clients: int = 2
    round_timeout: float = 600.0
    # outputs
    output_dir: str = "runs"
    run_name: str = ""
    overwrite: bool = False
    # privacy: none | dp-sgd (Opacus on each client) | client-dp (Flower's DP strategy wrappers)
    privacy: str = "none"
    noise_multiplier: float = 1.0  # Gaussian noise std over the clipping norm
    target_epsilon: float = 0.0  # > 0: solve the noise multiplier so the whole run spends this
    target_delta: float = 1e-5
    max_grad_norm: float = 1.0  # dp-sgd: per-sample gradient clipping norm
    dp_batch_size: int = 32  # dp-sgd: expected Poisson batch size
    clipping: str = "server-fixed"  # client-dp: server-fixed | client-fixed | server-adaptive | client-adaptive
    clipping_norm: float = 1.0  # client-dp: update clipping norm (the initial one when adaptive)
    # deployment: continue a run from the checkpoint in its run directory ('' for a new run)
    resume_from: str = ""

    @classmethod
    def from_flower(cls, values: Mapping[str, Any]) -> RunConfig:
        """Build from Flower's run config; unknown keys are an error, missing keys take defaults."""
        known = {f.name.replace("_", "-"): f for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"unknown run-config key(s) {unknown}; accepted keys: {', '.join(sorted(known))}")
        typed = {known[key].name: _typed(key, value, known[key].type) for key, value in values.items()}
        config = cls(**typed)
        config.validate()
        return config

    def to_flower(self) -> dict[str, Any]:
        """The kebab-case mapping that :meth:`from_flower` reads."""
        return {f.name.replace("_", "-"): getattr(self, f.name) for f in dataclasses.fields(self)}

    def validate(self) -> None:
        """Range checks that need no registry of names (those live with the registries)."""
        checks = [
            (self.num_server_rounds >= 1, "num-server-rounds must be >= 1"),
            (self.local_epochs >= 1, "local-epochs must be >= 1"),
            (self.lr > 0, "lr must be > 0"),
            (self.weight_decay >= 0, "weight-decay must be >= 0"),
            (self.proximal_mu >= 0, "proximal-mu must be >= 0"),
            (0 < self.fraction_train <= 1, "fraction-train must lie in (0, 1]"),
            (self.min_clients >= 1, "min-clients must be >= 1"),
            (self.round_timeout > 0, "round-timeout must be > 0"),
            (self.hidden >= 1 and self.num_layers >= 1, "hidden and num-layers must be >= 1"),
            (0 <= self.dropout < 1, "dropout must lie in [0, 1)"),
            (self.dirichlet_alpha > 0, "dirichlet-alpha must be > 0"),
            (0 <= self.unseen_node_frac < 1, "unseen-node-frac must lie in [0, 1)"),
            (self.missing_classes >= 0, "missing-classes must be >= 0"),
            (self.fedlog_lr > 0, "fedlog-lr must be > 0"),
            (
                min(self.fedlog_hidden, self.fedlog_embedding, self.fedlog_batch_size, self.fedlog_num_proto) >= 1
                and self.fedlog_generator_hidden >= 1,
                "fedlog-hidden, -embedding, -batch-size, -num-proto and -generator-hidden must be >= 1",
            ),
            (
                min(self.fedlog_beta_metric, self.fedlog_beta_norm, self.fedlog_beta_cd, self.fedlog_lambda_step) >= 0,
                "fedlog-beta-metric, -beta-norm, -beta-cd and -lambda-step must be >= 0",
            ),
            (0 <= self.fedlog_lambda_threshold <= 1, "fedlog-lambda-threshold must lie in [0, 1]"),
            (
                min(self.fedlog_warmup_epochs, self.fedlog_warmup_patience, self.fedlog_generator_epochs) >= 0,
                "fedlog-warmup-epochs, -warmup-patience and -generator-epochs must be >= 0",
            ),
            (self.certify_c > 0, "certify-c must be > 0"),
            (
                self.certify_labels_per_class >= 1 and self.certify_targets >= 1,
                "certify-labels-per-class and certify-targets must be >= 1",
            ),
            (
                _is_budget_list(self.certify_budgets),
                f"certify-budgets must be like '1,2,3', got {self.certify_budgets!r}",
            ),
            (
                _is_unlearn_request(self.unlearn_request),
                f"unlearn-request must be client:i, nodes:i:FRACTION, class:c or empty, got {self.unlearn_request!r}",
            ),
            (
                self.unlearn_method in UNLEARN_METHODS,
                f"unlearn-method must be one of {', '.join(UNLEARN_METHODS)}, got {self.unlearn_method!r}",
            ),
            (
                not (self.resume_from and self.unlearn_request and self.unlearn_method == "federaser"),
                "unlearn-method='federaser' replays every round's client updates, which a resumed run lacks "
                "before its checkpoint; choose another unlearn-method",
            ),
            (_is_device(self.device), f"device must be auto, cpu, cuda or cuda:N, got {self.device!r}"),
            *self._privacy_checks(),
        ]
        for ok, message in checks:
            if not ok:
                raise ValueError(message)

    def _privacy_checks(self) -> list[tuple[bool, str]]:
        if self.privacy not in PRIVACY:
            return [(False, f"privacy must be one of {', '.join(PRIVACY)}, got {self.privacy!r}")]
        if self.privacy == "none":
            return []
        checks = [
            (
                self.noise_multiplier > 0,
                f"noise-multiplier must be > 0 under privacy={self.privacy!r} (zero noise has no finite epsilon, "
                f"whatever target-epsilon asks), got {self.noise_multiplier}",
            ),
            (
                self.target_epsilon >= 0,
                f"target-epsilon must be >= 0 (0: use noise-multiplier), got {self.target_epsilon}",
            ),
            (0 < self.target_delta < 1, f"target-delta must lie in (0, 1), got {self.target_delta}"),
            (
                not self.resume_from,
                f"resume-from cannot continue a privacy={self.privacy!r} run: a resumed run is a new Flower run, "
                "its clients' accountants start empty and the reported epsilon would undercount; start a new run",
            ),
        ]
        if self.privacy == "dp-sgd":
            check_decoupled(self.model)
            checks += [
                (self.max_grad_norm > 0, f"max-grad-norm must be > 0, got {self.max_grad_norm}"),
                (self.dp_batch_size >= 1, f"dp-batch-size must be >= 1, got {self.dp_batch_size}"),
                (
                    self.algorithm in ("fedavg", "local"),
                    f"privacy='dp-sgd' trains with plain DP-SGD: use algorithm fedavg or local, not {self.algorithm!r}",
                ),
            ]
        else:
            checks += [
                (self.clipping in CLIPPINGS, f"clipping must be one of {', '.join(CLIPPINGS)}, got {self.clipping!r}"),
                (self.clipping_norm > 0, f"clipping-norm must be > 0, got {self.clipping_norm}"),
                (
                    self.algorithm in ("fedavg", "fedprox"),
                    f"privacy='client-dp' adds noise to an aggregate: use algorithm fedavg or fedprox, "
                    f"not {self.algorithm!r}",
                ),
            ]
        return checks

    def budgets(self) -> list[int]:
        """``certify-budgets`` as a sorted list of label-flip budgets (empty: no certificates)."""
        return sorted({int(part) for part in self.certify_budgets.split(",") if part.strip()})


PRIVACY = ("none", "dp-sgd", "client-dp")
CLIPPINGS = ("server-fixed", "client-fixed", "server-adaptive", "client-adaptive")


def _typed(key: str, value: Any, kind: str) -> Any:
    """Check one value against its field's annotation (``"int"``, ``"float"``, ``"str"``, ``"bool"``)."""
    if kind == "bool" and isinstance(value, bool):
        return value
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "float" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind == "str" and isinstance(value, str):
        return value
    raise ValueError(f"run-config key {key!r} must be {_ARTICLE[kind]}, got {value!r}")


_ARTICLE = {"bool": "true or false", "int": "an integer", "float": "a number", "str": "a quoted string"}


def _is_device(spec: str) -> bool:
    if spec in ("auto", "cpu", "cuda"):
        return True
    prefix, _, index = spec.partition(":")
    return prefix == "cuda" and index.isdigit()


# the names of server.unlearning.METHODS (the registry; a test keeps them equal)
UNLEARN_METHODS = ("wash", "laf", "laf+r", "laf+ft", "federaser", "finetune", "gradient-ascent", "retrain")


def _is_unlearn_request(text: str) -> bool:
    """The shape of a request (ranges are checked where the federation is known)."""
    return is_request(text)


def _is_budget_list(text: str) -> bool:
    parts = [part.strip() for part in text.split(",") if part.strip()]
    return all(part.isdigit() for part in parts)
