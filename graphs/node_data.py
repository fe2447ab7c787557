"""One client's subgraph as a file in its own data root: what a SuperNode's host holds.

In a deployment each host keeps only its own data. :func:`export_partitions` cuts
the federation once (on the operator's machine) and writes client ``i``'s subgraph,
with its split masks, to ``<folder>/node-<i>/stamen-partition.pt``; that folder is
then copied to host ``i`` and named there as the SuperNode's ``data-root``. The
ClientApp finds the file and reads it instead of loading and cutting the whole graph
(:func:`load_partition`), which also spares every ClientApp process the graph load.

The file stores plain tensors (read with ``weights_only=True``, nothing unpickled)
and the fingerprint of the :class:`FederationSpec` that made it, so a run whose data
keys differ from the export's fails with a message instead of training on other data.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch
from torch_geometric.data import Data

from graphs.federation import FederationSpec, build_federation
from graphs.names import is_graph_set

PARTITION_FILE = "stamen-partition.pt"
_TENSORS = ("x", "edge_index", "y", "global_id", "train_mask", "val_mask", "test_mask")


def spec_fingerprint(spec: FederationSpec) -> str:
    """The spec as canonical JSON, without the data root (it differs from host to host)."""
    fields = dataclasses.asdict(spec)
    fields.pop("data_root")
    return json.dumps(fields, sort_keys=True)


def export_partitions(spec: FederationSpec, folder: Path) -> list[Path]:
    """Write each client's subgraph to ``folder/node-<i>/stamen-partition.pt``; return the files.

    Raises:
        ValueError: ``spec``'s dataset is a graph set, whose clients' graphs are not exported (yet).
    """
    if is_graph_set(spec.dataset):
        raise ValueError(
            f"dataset {spec.dataset!r} is a set of graphs, whose partitions are not exported yet: each host builds "
            "its client's graphs itself (graphs-synth from the seed; tu:NAME from the TU files in its data-root)"
        )
    federation = build_federation(spec)
    written = []
    for index, client in enumerate(federation.clients):
        path = Path(folder) / f"node-{index}" / PARTITION_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        stored = {name: getattr(client, name) for name in _TENSORS}
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
    data = Data(**{name: stored[name] for name in _TENSORS})
    data.num_classes = stored["num_classes"]
    return data


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
    if missing := [key for key in (*_TENSORS, "num_classes", "partition_id", "spec") if key not in stored]:
        return f"missing {', '.join(missing)}"
    if bad := [name for name in _TENSORS if not isinstance(stored[name], torch.Tensor)]:
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
    if any(stored[name].shape != (num_nodes,) for name in _TENSORS[2:]):
        return "x, y, global_id and the masks disagree in node count"
    if edge_index.dim() != 2 or edge_index.size(0) != 2 or edge_index.dtype != torch.long:
        return "edge_index is not a 2 x E integer tensor"
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        return "edge_index names nodes outside the subgraph"
    return None
