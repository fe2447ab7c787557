"""A classifier that computes on a graph derived from the one it is given (FedSage's graph mended with generated
neighbours): what the in-process engine's batched training needs to know of such a model.

:class:`OnDerivedGraph` names the module a client trains and sends (``classifier``) and the graph it computes on
(:meth:`OnDerivedGraph.derived`); :mod:`stamen.models.together` trains the classifiers of several clients on their
derived graphs at once, as it trains plain classifiers on their own graphs.
"""

from __future__ import annotations

from torch import Tensor, nn

from stamen.models.stacked_rows import StackedRows


class OnDerivedGraph(nn.Module):
    """``classifier`` applied to a graph derived from the input graph by :meth:`derived`."""

    classifier: nn.Module

    def derived(self, x: Tensor, edge_index: Tensor) -> tuple[StackedRows | Tensor, Tensor]:
        """The graph (node features, ``edge_index``) the classifier computes on for the graph ``x``, ``edge_index``."""
        raise NotImplementedError
