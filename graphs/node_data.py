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

PARTITION_FILE = "stamen-partition.pt"
_TENSORS = ("x", "edge_index", "y", "global_id", "train_mask", "val_mask", "test_mask")


def spec_fingerprint(spec: FederationSpec) -> str:
    """The spec as canonical JSON, without the data root (it differs from host to host)."""
    fields = dataclasses.asdict(spec)
    fields.pop("data_root")
    return json.dumps(fields, sort_keys=True)


def export_partitions(spec: FederationSpec, folder: Path) -> list[Path]:
    """Write each client's subgraph to ``folder/node-<i>/stamen-partition.pt``; return the files."""
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
        ValueError: the file was exported for another partition or other data keys.
    """
    if not spec.data_root:
        return None
    path = Path(spec.data_root).expanduser() / PARTITION_FILE
    if not path.is_file():
        return None
    stored = torch.load(path, weights_only=True)
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
