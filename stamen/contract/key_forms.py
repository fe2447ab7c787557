"""The shapes of the run config's string keys (:class:`stamen.contract.keys.Form`): a predicate and its words each.

A predicate accepts a value or refuses it; :mod:`stamen.contract.run_config` declares its keys with these.
"""

from __future__ import annotations

from stamen.contract.keys import Form
from stamen.contract.requests import is_request
from stamen.contract.tracking import TRACKING_FORM_TEXT, is_tracking
from stamen.graphs.names import accepted_datasets, dataset_problem


def _is_device(spec: str) -> bool:
    if spec in ("auto", "cpu", "cuda"):
        return True
    prefix, _, index = spec.partition(":")
    return prefix == "cuda" and index.isdigit()


def _is_unlearn_request(text: str) -> bool:
    """The shape of a request (ranges are checked where the federation is known)."""
    return is_request(text)


def _is_dataset(name: str) -> bool:
    """True for a dataset name; otherwise a ValueError that names the exact problem (the forms are too
    many for the generic ``must be ...`` line, e.g. the accepted ``pyg:`` classes)."""
    problem = dataset_problem(name)
    if problem:
        raise ValueError(problem)
    return True


def _is_budget_list(text: str) -> bool:
    return all(part.strip().isdigit() for part in text.split(",") if part.strip())


def _is_malicious_clients(text: str) -> bool:
    """Empty, a positive count, or a comma list of partition ids (ranges are checked where the clients are known)."""
    text = text.strip()
    if text == "" or ("," not in text and text.isdigit() and int(text) > 0):
        return True
    ids = [part.strip() for part in text.split(",")]
    ids = ids[:-1] if ids[-1] == "" else ids
    return "," in text and bool(ids) and all(part.isdigit() for part in ids) and len(set(map(int, ids))) == len(ids)


DEVICE = Form(_is_device, "auto, cpu, cuda or cuda:N")
BUDGETS = Form(_is_budget_list, "like '1,2,3' (empty: off)")
DATASET = Form(_is_dataset, accepted_datasets)  # read live: the dataset registry's plug-ins too
REQUEST = Form(_is_unlearn_request, "client:i, nodes:i:FRACTION, class:c or empty")
TRACKING = Form(is_tracking, TRACKING_FORM_TEXT)
MALICIOUS = Form(_is_malicious_clients, "a count like '2', partition ids like '0,3' or '3,', or empty")
