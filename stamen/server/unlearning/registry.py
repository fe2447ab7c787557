"""Every unlearning method by name: the one list that ``unlearn-method``, ``stamen unlearn --method``
and the in-process experiment read. Adding a method is its module and a line here."""

from __future__ import annotations

from stamen.server.unlearning.base import UnlearningMethod
from stamen.server.unlearning.baselines import Finetune, GradientAscent, Retrain
from stamen.server.unlearning.federaser import FedEraser
from stamen.server.unlearning.laf import LAF, LAFFinetune, LAFRepair
from stamen.server.unlearning.wash import Wash

METHODS: dict[str, UnlearningMethod] = {
    method.name: method
    for method in (Wash(), LAF(), LAFRepair(), LAFFinetune(), FedEraser(), Finetune(), GradientAscent(), Retrain())
}
RETRAIN = "retrain"  # the gold standard every other method is compared with


def unlearning_method(name: str) -> UnlearningMethod:
    """The method registered as ``name`` (ValueError naming the choices otherwise)."""
    if name not in METHODS:
        raise ValueError(f"unknown unlearning method {name!r}; choose one of: {', '.join(METHODS)}")
    return METHODS[name]
