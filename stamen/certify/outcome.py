"""What a certificate proved: statuses and the outcome of one target at one budget.

Only proofs count. A target is ``CERTIFIED`` for budget :math:`k` when no flip set of
size :math:`\\le k` changes its prediction (a solver proved optimality with gap 0 or
infeasibility, the exhaustive sweep retrained on every flip set, or the stability
bound holds); ``NOT_CERTIFIED`` when a concrete flip set changes it; ``UNKNOWN``
otherwise (a solver time or node limit): never counted as certified.

A solver run itself ends ``OPTIMAL``, ``INFEASIBLE`` or ``UNKNOWN`` (:class:`SolveStatus`;
PuLP's "Optimal" after a HiGHS time-limit stop is ``UNKNOWN``, see
:func:`stamen.certify.solvers.read_status`). A collective certificate is a count, so its status
is a :class:`SolveStatus`: ``OPTIMAL`` when the count is proven, ``UNKNOWN`` when only
its bounds are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Status(StrEnum):
    """Certificate of one target at one budget."""

    CERTIFIED = "certified"
    NOT_CERTIFIED = "not_certified"
    UNKNOWN = "unknown"


class SolveStatus(StrEnum):
    """What a solver run (or a collective count) proved."""

    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    UNKNOWN = "unknown"


class Method(StrEnum):
    """Which step of the cascade decided an outcome."""

    CLEAN = "clean"  # budget 0: the clean prediction
    ENUMERATE = "enumerate"  # exhaustive retraining sweep (stamen.certify.exhaustive)
    BOUND = "bound"  # stability bound (stamen.certify.screening)
    ATTACK = "attack"  # greedy attack found a flip set (stamen.certify.screening)
    MONOTONE = "monotone"  # a smaller budget's counterexample
    MILP = "milp"  # exact MILP
    EXACT = "exact"  # closed form (kernel ridge regression is linear in the labels)
    CLIENTS = "clients"  # worst case over attacking clients (stamen.certify.federated)


@dataclass
class MILPResult:
    """Outcome of one MILP solve (scores are in the original, unscaled units)."""

    status: SolveStatus
    objective: float | None  # worst-case score (sample-wise), count (collective)
    bound: float | None
    flips: list[int] | None
    seconds: float
    raw_status: str
    new_labels: object = None  # multi-class: the relabelled training labels (numpy array)


@dataclass
class BudgetOutcome:
    """One target at one budget: the one record shape of every model, mode and attacker."""

    status: Status
    method: Method
    worst_case_score: float | None
    bounds: tuple[float, float] | None
    flips: list[int] | None
    seconds: float
    milp: bool
    raw_status: str = ""
    per_client: dict[int, Status] | None = None  # client-restricted attackers only
    relabel: dict[int, int] | None = None  # multi-class: the counterexample's new class per flipped position

    def as_dict(self) -> dict:
        out = {
            "status": self.status.value,
            "method": self.method.value,
            "worst_case_score": self.worst_case_score,
            "bounds": None if self.bounds is None else [float(self.bounds[0]), float(self.bounds[1])],
            "flips": None if self.flips is None else [int(i) for i in self.flips],
            "seconds": self.seconds,
            "needed_milp": self.milp,
            "solver_status": self.raw_status,
        }
        if self.per_client is not None:
            out["per_client"] = {str(cl): st.value for cl, st in self.per_client.items()}
        if self.relabel is not None:
            out["relabel"] = {str(i): int(cl) for i, cl in self.relabel.items()}
        return out

    @classmethod
    def from_dict(cls, d: dict) -> BudgetOutcome:
        """The outcome :meth:`as_dict` wrote (read back from a journal): ``as_dict`` of it is ``d`` again."""
        per_client = d.get("per_client")
        relabel = d.get("relabel")
        return cls(
            status=Status(d["status"]),
            method=Method(d["method"]),
            worst_case_score=d["worst_case_score"],
            bounds=None if d["bounds"] is None else (float(d["bounds"][0]), float(d["bounds"][1])),
            flips=None if d["flips"] is None else [int(i) for i in d["flips"]],
            seconds=float(d["seconds"]),
            milp=bool(d["needed_milp"]),
            raw_status=d["solver_status"],
            per_client=None if per_client is None else {int(cl): Status(st) for cl, st in per_client.items()},
            relabel=None if relabel is None else {int(i): int(cl) for i, cl in relabel.items()},
        )


@dataclass
class TargetOutcome:
    """All budgets of one target (``position`` = its row in the target kernel block)."""

    position: int
    clean_score: float
    budgets: dict[int, BudgetOutcome] = field(default_factory=dict)

    def as_dict(self) -> dict:
        """JSON form (a line of the certification journal, :mod:`stamen.certify.journal`)."""
        return {
            "position": self.position,
            "clean_score": self.clean_score,
            "budgets": {str(k): b.as_dict() for k, b in self.budgets.items()},
        }

    @classmethod
    def from_dict(cls, d: dict) -> TargetOutcome:
        """The outcome :meth:`as_dict` wrote; budgets keep their order."""
        budgets = {int(k): BudgetOutcome.from_dict(b) for k, b in d["budgets"].items()}
        return cls(int(d["position"]), float(d["clean_score"]), budgets)


@dataclass
class CollectiveOutcome:
    """Collective certificate at one budget: how many targets one flip set can change.

    ``max_changed`` is the proven optimum (``None`` unless ``status`` is ``OPTIMAL``);
    ``changed_upper_bound`` is always proven, so at least ``certified_lower_bound``
    targets are certified together.
    """

    status: SolveStatus
    method: Method
    max_changed: int | None
    changed_upper_bound: int
    certified_lower_bound: int
    flips: list[int] | None
    seconds: float
    best_found: int | None = None
    milp_targets: int = 0
    flip_sets: int | None = None
    solver_status: str = ""

    def as_dict(self) -> dict:
        return {
            "status": self.status.value,
            "method": self.method.value,
            "max_changed": self.max_changed,
            "best_found": self.best_found,
            "changed_upper_bound": self.changed_upper_bound,
            "certified_lower_bound": self.certified_lower_bound,
            "flips": None if self.flips is None else [int(i) for i in self.flips],
            "seconds": self.seconds,
            "milp_targets": self.milp_targets,
            "flip_sets": self.flip_sets,
            "solver_status": self.solver_status,
        }

    @classmethod
    def from_dict(cls, d: dict) -> CollectiveOutcome:
        """The outcome :meth:`as_dict` wrote (read back from a journal)."""
        return cls(
            status=SolveStatus(d["status"]),
            method=Method(d["method"]),
            max_changed=d["max_changed"],
            changed_upper_bound=int(d["changed_upper_bound"]),
            certified_lower_bound=int(d["certified_lower_bound"]),
            flips=None if d["flips"] is None else [int(i) for i in d["flips"]],
            seconds=float(d["seconds"]),
            best_found=d["best_found"],
            milp_targets=int(d["milp_targets"]),
            flip_sets=d["flip_sets"],
            solver_status=d["solver_status"],
        )
