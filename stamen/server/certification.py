"""Federated label-flip certificates: ask every client, pool the ratios, write them down.

Each client certifies its own predictions (:mod:`stamen.client.certification`) and replies
with ratios only; the federation's ratio for a budget is the clients' ratios weighted
by their number of targets. Written to ``certificates.json`` in the run directory.
"""

from __future__ import annotations

from logging import INFO
from pathlib import Path
from typing import Any

from flwr.app import ConfigRecord, Message, MessageType, RecordDict
from flwr.common import log
from flwr.serverapp import Grid

from stamen.common.file_writes import atomic_write
from stamen.contract import protocol as p
from stamen.contract import strict_json
from stamen.contract.run_config import RunConfig
from stamen.server.loop import exchange


def certify_federation(grid: Grid, config: RunConfig, run_dir: Path) -> dict[str, Any]:
    """Ask every client for its certified ratios, pool them, write ``certificates.json``, log a table."""
    messages = [
        Message(
            content=RecordDict({p.CONFIG: ConfigRecord({p.QUERY: p.CERTIFY_QUERY})}),
            dst_node_id=node_id,
            message_type=MessageType.QUERY,
        )
        for node_id in grid.get_node_ids()
    ]
    replies = exchange(grid, messages, config.round_timeout, config.min_clients, "certification")
    clients = sorted((dict(reply.content[p.METRICS]) for reply in replies), key=lambda m: m[p.PARTITION_ID])
    total = sum(c[p.NUM_TARGETS] for c in clients)
    budgets: dict[str, dict[str, float]] = {}
    for budget in config.budgets():
        budgets[str(budget)] = {
            name: sum(c.get(f"{name}-{budget}", 0.0) * c[p.NUM_TARGETS] for c in clients) / total if total else 0.0
            for name in (p.CERTIFIED_RATIO, p.CERTIFIED_ACCURACY, p.UNKNOWN_RATIO)
        }
    report = {
        "arch": config.certify_arch,
        "C": config.certify_c,
        "labels_per_class": config.certify_labels_per_class,
        "targets": int(total),
        "budgets": budgets,
        "clients": clients,
    }
    atomic_write(run_dir / "certificates.json", strict_json.dumps(report, indent=2) + "\n")
    lines = [f"{'budget':>6}  {'certified ratio':>15}  {'certified acc':>13}  {'unknown':>8}"]
    lines += [
        f"{k:>6}  {v[p.CERTIFIED_RATIO]:>15.3f}  {v[p.CERTIFIED_ACCURACY]:>13.3f}  {v[p.UNKNOWN_RATIO]:>8.3f}"
        for k, v in budgets.items()
    ]
    log(INFO, "stamen: federated label-flip certificates (%d targets)\n%s", int(total), "\n".join(lines))
    return report
