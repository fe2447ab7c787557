"""A model's state set in place: ``load_state_dict``'s effect without its walk of the module tree.

A client loads weights into its model at least twice a message: the run's initial weights
(:meth:`stamen.client.job.LocalJob.model`) and the weights the server sent. ``load_state_dict``
walks every submodule with its hooks and prefixes on each call: 90 µs for a two-layer GCN,
about 2 ms of a 10-client Cora round in process. :func:`copy_state` copies the tensors into
the model's own (13-40 µs) when that is all ``load_state_dict`` would do, and leaves every
other case to it, with its checks and error messages.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
from torch.nn.parameter import is_lazy


def copy_state(module: torch.nn.Module, tensors: Mapping[str, torch.Tensor]) -> None:
    """``module.load_state_dict(tensors)`` (strict): each tensor copied into the module's own, in place.

    The copy is taken when ``tensors`` names exactly the module's state, each with the shape
    of the module's tensor, and no submodule has load hooks or uninitialised (lazy)
    parameters; otherwise ``load_state_dict`` runs, so the outcome, a mismatch's error
    included, is ``load_state_dict``'s.
    """
    own = module.state_dict(keep_vars=True)
    if (
        own.keys() != tensors.keys()
        or any(is_lazy(value) or value.shape != tensors[name].shape for name, value in own.items())
        or any(m._load_state_dict_pre_hooks or m._load_state_dict_post_hooks for m in module.modules())
    ):
        module.load_state_dict(tensors)
        return
    with torch.no_grad():
        for name, value in own.items():
            value.copy_(tensors[name])
