"""MILP solver back-ends (through PuLP) and an honest reading of their status.

``highs`` uses :class:`pulp.HiGHS` (the in-process ``highspy`` API), with a warm start
passed through ``Highs.setSolution``; ``cbc`` uses :class:`pulp.PULP_CBC_CMD` with
``preprocess off`` (CBC's default preprocessing returned wrong "optimal" answers on
these models). Both run with relative and absolute gap 0 and tight feasibility
tolerances. PuLP maps a HiGHS time-limit stop to ``status = Optimal``; the solution
status (``sol_status``) tells the two apart, so :func:`read_status` requires
``sol_status == LpSolutionOptimal`` before it calls a result optimal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pulp

from stamen.certify.names import SOLVERS
from stamen.certify.outcome import SolveStatus


@dataclass(frozen=True)
class SolverSpec:
    """Which MILP solver to use and how long it may run per model."""

    name: str = "highs"
    time_limit: float | None = 60.0
    threads: int = 1

    def __post_init__(self):
        if self.name not in SOLVERS:
            raise ValueError(f"unknown solver {self.name!r}; accepted: {', '.join(SOLVERS)}")
        if self.time_limit is not None and not (self.time_limit > 0):
            raise ValueError(f"time limit must be > 0 seconds, got {self.time_limit}")


class _WarmHiGHS(pulp.HiGHS):
    """pulp.HiGHS that hands the variables' initial values to HiGHS as a MIP start."""

    def __init__(self, warm_start: bool = True, **kwargs):
        super().__init__(**kwargs)
        self.warm_start = warm_start

    def callSolver(self, lp):  # PuLP's name
        if self.warm_start:
            # on use: highspy stays out of this module's import
            import highspy

            variables = lp.variables()
            values = [0.0] * len(variables)
            have = False
            for var in variables:
                if var.varValue is not None:
                    values[var.index] = float(var.varValue)
                    have = True
            if have:
                sol = highspy.HighsSolution()
                sol.col_value = values
                sol.value_valid = True
                lp.solverModel.setSolution(sol)
        lp.solverModel.run()


def make_solver(spec: SolverSpec, warm_start: bool = True):
    """PuLP solver object for ``spec``."""
    if spec.name == "highs":
        return _WarmHiGHS(
            warm_start=warm_start,
            msg=False,
            gapRel=0.0,
            gapAbs=0.0,
            threads=spec.threads,
            timeLimit=spec.time_limit,
            mip_feasibility_tolerance=1e-9,
            primal_feasibility_tolerance=1e-9,
            dual_feasibility_tolerance=1e-9,
            random_seed=0,
        )
    return pulp.PULP_CBC_CMD(
        msg=False,
        gapRel=0.0,
        gapAbs=0.0,
        threads=spec.threads,
        timeLimit=spec.time_limit,
        warmStart=warm_start,
        options=["preprocess off", "integerTolerance 1e-9", "primalTolerance 1e-9"],
    )


@dataclass
class SolveOutcome:
    """What a solver proved: ``OPTIMAL``, ``INFEASIBLE`` or ``UNKNOWN`` (anything else)."""

    status: SolveStatus
    objective: float | None
    bound: float | None
    raw: str


def read_status(prob: pulp.LpProblem, spec: SolverSpec) -> SolveOutcome:
    """Classify a solved PuLP problem; only proofs count (see module docstring)."""
    status, sol_status = prob.status, prob.sol_status
    raw = f"{pulp.LpStatus.get(status, status)}/{pulp.LpSolution.get(sol_status, sol_status)}"
    bound = None
    if spec.name == "highs" and getattr(prob, "solverModel", None) is not None:
        try:
            info = prob.solverModel.getInfo()
            model_status = prob.solverModel.getModelStatus()
            raw += f"/{prob.solverModel.modelStatusToString(model_status)}"
            b = float(info.mip_dual_bound)
            if math.isfinite(b):
                # PuLP hands HiGHS a maximisation as the minimisation of -objective
                bound = -b if prob.sense == pulp.LpMaximize else b
        except Exception:  # pragma: no cover - informational only
            pass
    if status == pulp.LpStatusInfeasible:
        return SolveOutcome(SolveStatus.INFEASIBLE, None, None, raw)
    if status == pulp.LpStatusOptimal and sol_status == pulp.LpSolutionOptimal:
        obj = pulp.value(prob.objective)
        return SolveOutcome(SolveStatus.OPTIMAL, float(obj) if obj is not None else 0.0, bound, raw)
    obj = None
    if sol_status == pulp.LpSolutionIntegerFeasible:
        v = pulp.value(prob.objective)
        obj = float(v) if v is not None else None
    return SolveOutcome(SolveStatus.UNKNOWN, obj, bound, raw)
