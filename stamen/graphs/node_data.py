"""One client's subgraph as a file in its own data root: what a SuperNode's host holds.

In a deployment each host keeps only its own data. :func:`export_partitions` cuts
the federation once (on the operator's machine) and writes client ``i``'s subgraph,
with its split masks, to ``<folder>/node-<i>/stamen-partition.pt``; that folder is
then copied to host ``i`` and named there as the SuperNode's ``data-root``. The
ClientApp finds the file and reads it instead of loading and cutting the whole graph
(:func:`load_partition`), which also spares every ClientApp process the graph load.

A graph set's client (graph classification, :mod:`stamen.graphs.graph_federation`) holds whole small
graphs, one :class:`torch_geometric.data.Batch`; its file holds the batch's node features,
edges (numbered within the batch), one class per graph, each graph's node and edge counts and
the graph-level split masks (``kind`` ``graph-set``), and the host rebuilds the same batch from
them (:func:`_graph_set`), graph by graph, so it is the one the simulation's client holds.

The file stores plain tensors (read with ``weights_only=True``, nothing unpickled)
and the fingerprint of the :class:`FederationSpec` that made it, so a run whose data
keys differ from the export's fails with a message instead of training on other data.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch
from torch_geometric.data import Batch, Data

from stamen.graphs.federation import FederationSpec, build_federation
from stamen.graphs.names import is_graph_set

PARTITION_FILE = "stamen-partition.pt"
_TENSORS = ("x", "edge_index", "y", "global_id", "train_mask", "val_mask", "test_mask")
# A graph set's export: node features and edges of the batch, then one entry per graph.
GRAPH_SET = "graph-set"
_GRAPH_TENSORS = ("x", "edge_index", "y", "graph_nodes", "graph_edges", "train_mask", "val_mask", "test_mask")


def spec_fingerprint(spec: FederationSpec) -> str:
    """The spec as canonical JSON, without the data root (it differs from host to host)."""
    fields = dataclasses.asdict(spec)
    fields.pop("data_root")
    return json.dumps(fields, sort_keys=True)


def export_partitions(spec: FederationSpec, folder: Path) -> list[Path]:
    """Write each client's subgraph (a graph set's: its graphs) to ``folder/node-<i>/stamen-partition.pt``;
    return the files."""
    federation = build_federation(spec)
    graph_set = is_graph_set(spec.dataset)
    written = []
    for index, client in enumerate(federation.clients):
        path = Path(folder) / f"node-{index}" / PARTITION_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        stored = _graph_set_tensors(client) if graph_set else {name: getattr(client, name) for name in _TENSORS}
        stored.update(
            {
                "num_classes": int(client.num_classes),
                "partition_id": index,
                "spec": spec_fingerprint(spec),
            }
        )
        torch.save(stored, path)
        written.append(path)
    return written


def load_partition(spec: FederationSpec, partition_id: int) -> Data | None:
    """Client ``partition_id``'s exported subgraph from ``spec.data_root``, or ``None`` if none is there.

    Raises:
        ValueError: the file is damaged or not an export, or was exported for another
            partition or other data keys (one line).
    """
    if not spec.data_root:
        return None
    path = Path(spec.data_root).expanduser() / PARTITION_FILE
    if not path.is_file():
        return None
    stored = _read_partition_file(path)
    if stored["partition_id"] != partition_id:
        raise ValueError(
            f"{path} holds partition {stored['partition_id']}, but this SuperNode has partition-id={partition_id}"
        )
    if stored["spec"] != spec_fingerprint(spec):
        expected, found = json.loads(spec_fingerprint(spec)), json.loads(stored["spec"])
        differing = sorted(key for key in expected if expected[key] != found.get(key))
        raise ValueError(
            f"{path} was exported for other data settings ({', '.join(differing)} differ); "
            "export again with this run config (stamen deploy partition)"
        )
    data = _graph_set(stored) if stored.get("kind") == GRAPH_SET else Data(**{name: stored[name] for name in _TENSORS})
    data.num_classes = stored["num_classes"]
    return data


def _graph_set_tensors(client: Batch) -> dict[str, object]:
    """A graph set client's batch as plain tensors (see the module docstring)."""
    graph_nodes = client.ptr[1:] - client.ptr[:-1]
    graph_edges = torch.bincount(client.batch[client.edge_index[0]], minlength=int(client.num_graphs))
    return {
        "kind": GRAPH_SET,
        **{name: getattr(client, name) for name in ("x", "edge_index", "y", "train_mask", "val_mask", "test_mask")},
        "graph_nodes": graph_nodes,
        "graph_edges": graph_edges,
    }


def _graph_set(stored: dict) -> Batch:
    """The client's batch rebuilt from its export, graph by graph (as :mod:`stamen.graphs.graph_federation` batches)."""
    node_starts = torch.cumsum(stored["graph_nodes"], 0) - stored["graph_nodes"]
    edge_starts = torch.cumsum(stored["graph_edges"], 0) - stored["graph_edges"]
    graphs = []
    for g, (lo, n, e_lo, e) in enumerate(
        zip(node_starts.tolist(), stored["graph_nodes"].tolist(), edge_starts.tolist(), stored["graph_edges"].tolist())
    ):
        graphs.append(
            Data(
                x=stored["x"][lo : lo + n],
                edge_index=stored["edge_index"][:, e_lo : e_lo + e] - lo,
                y=stored["y"][g : g + 1],
                num_nodes=n,
            )
        )
    batch = Batch.from_data_list(graphs)
    batch.train_mask, batch.val_mask, batch.test_mask = (stored[n] for n in ("train_mask", "val_mask", "test_mask"))
    return batch


def _read_partition_file(path: Path) -> dict:
    """The export in ``path``, read with ``weights_only=True`` (plain tensors and values, no code) and checked."""
    redo = f"export it again (stamen deploy partition) and copy {PARTITION_FILE} here"
    try:
        stored = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:  # weights_only refuses anything but tensors and plain values; the rest is damage
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"{path} is not a readable Stamen partition ({reason}); {redo}") from error
    problem = _export_problem(stored)
    if problem:
        raise ValueError(f"{path} is not a Stamen partition export ({problem}); {redo}")
    return stored


def _export_problem(stored: object) -> str | None:
    """What makes ``stored`` not an export of :func:`export_partitions`, or ``None``."""
    if not isinstance(stored, dict):
        return "it does not hold a dict"
    tensors = _GRAPH_TENSORS if stored.get("kind") == GRAPH_SET else _TENSORS
    if missing := [key for key in (*tensors, "num_classes", "partition_id", "spec") if key not in stored]:
        return f"missing {', '.join(missing)}"
    if bad := [name for name in tensors if not isinstance(stored[name], torch.Tensor)]:
        return f"{', '.join(bad)} not tensors"
    if not all(type(stored[key]) is int for key in ("num_classes", "partition_id")) or not isinstance(
        stored["spec"], str
    ):
        return "num_classes, partition_id or spec of the wrong type"
    try:
        json.loads(stored["spec"])
    except ValueError:
        return "its spec is not JSON"
    x, edge_index = stored["x"], stored["edge_index"]
    num_nodes = x.size(0) if x.dim() == 2 else -1
    if edge_index.dim() != 2 or edge_index.size(0) != 2 or edge_index.dtype != torch.long:
        return "edge_index is not a 2 x E integer tensor"
    if stored.get("kind") == GRAPH_SET:
        return _graph_set_problem(stored, num_nodes)
    if any(stored[name].shape != (num_nodes,) for name in _TENSORS[2:]):
        return "x, y, global_id and the masks disagree in node count"
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        return "edge_index names nodes outside the subgraph"
    return None


def _graph_set_problem(stored: dict, num_nodes: int) -> str | None:
    """What makes a graph set's export inconsistent (counts, shapes, an edge leaving its graph), or ``None``."""
    nodes, edges, edge_index = stored["graph_nodes"], stored["graph_edges"], stored["edge_index"]
    num_graphs = nodes.size(0) if nodes.dim() == 1 else -1
    if any(stored[name].shape != (num_graphs,) for name in _GRAPH_TENSORS[2:]):
        return "y, the graphs' node and edge counts and the masks disagree in graph count"
    if nodes.dtype != torch.long or edges.dtype != torch.long or bool((nodes < 0).any() or (edges < 0).any()):
        return "the graphs' node and edge counts are not counts"
    if int(nodes.sum()) != num_nodes or int(edges.sum()) != edge_index.size(1):
        return "the graphs' node and edge counts do not add up to x's rows and edge_index's columns"
    starts = torch.cumsum(nodes, 0) - nodes
    lo = torch.repeat_interleave(starts, edges)  # each edge's graph's first node
    if edge_index.numel() and bool(
        ((edge_index < lo) | (edge_index >= lo + torch.repeat_interleave(nodes, edges))).any()
    ):
        return "edge_index joins nodes of different graphs"
    return None
