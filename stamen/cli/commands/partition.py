"""``stamen partition``: preview how a graph is cut into clients."""

from __future__ import annotations

import argparse

import numpy as np
from rich.table import Table

from stamen.common.options import finite_float, renamed
from stamen.common.screen import output_console
from stamen.contract import strict_json
from stamen.graphs import DATASETS, FederationSpec, build_federation
from stamen.graphs.names import DEFAULT_PARTITIONER, RUN_PARTITIONERS, client_datasets, is_dataset_list, is_graph_set


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("partition", help="preview a partition: nodes, edges and classes per client")
    parser.add_argument(
        "--dataset", default="csbm", help=f"one of: {', '.join(DATASETS)}; a graph set, or graph sets joined by '+'"
    )
    parser.add_argument("--data-root", default="", help="folder with the raw files (default: $STAMEN_DATA)")
    parser.add_argument("--clients", type=int, default=10, help="number of clients K")
    parser.add_argument(
        "--partitioner", dest="method", default=DEFAULT_PARTITIONER, help=f"one of: {', '.join(RUN_PARTITIONERS)}"
    )
    renamed(parser, "--method", "--partitioner")
    parser.add_argument("--alpha", type=finite_float, default=0.5, help="Dirichlet alpha of label-dirichlet")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=main)


def partition_report(args: argparse.Namespace) -> dict:
    spec = FederationSpec(
        dataset=args.dataset,
        num_clients=args.clients,
        partitioner=args.method,
        seed=args.seed,
        data_root=args.data_root,
        dirichlet_alpha=args.alpha,
    )
    federation = build_federation(spec)
    num_classes = int(federation.graph.num_classes)
    graph_set = is_graph_set(args.dataset)
    held = client_datasets(args.dataset, len(federation.clients)) if is_dataset_list(args.dataset) else None
    clients = [
        {
            **({"dataset": held[index]} if held else {}),  # cross-dataset: the dataset the client holds
            "nodes": int(client.num_nodes),
            "edges": int(client.edge_index.size(1)) // 2,
            "class_counts": np.bincount(client.y.numpy(), minlength=num_classes).tolist(),
            **({"graphs": int(client.num_graphs)} if graph_set else {}),  # a graph set's classes count graphs
        }
        for index, client in enumerate(federation.clients)
    ]
    return {
        **({"num_graphs": int(federation.graph.num_graphs)} if graph_set else {}),
        "dataset": args.dataset,
        "method": args.method,
        "seed": args.seed,
        "num_nodes": int(federation.graph.num_nodes),
        "num_edges": int(federation.graph.edge_index.size(1)) // 2,
        "cut_edges": federation.cut_edges,
        "clients": clients,
    }


def main(args: argparse.Namespace) -> int:
    report = partition_report(args)
    if args.json:
        print(strict_json.dumps(report))
        return 0

    table = Table(title=f"{args.dataset}: {args.clients} clients by {args.method} (seed {args.seed})")
    graph_set = "num_graphs" in report
    histogram_column = "class histogram (graphs)" if graph_set else "class histogram"
    listed = any("dataset" in client for client in report["clients"])
    columns = ("client", *(("dataset",) if listed else ()), *(("graphs",) if graph_set else ()), "nodes")
    for column in (*columns, "internal edges", histogram_column):
        left = column in (histogram_column, "dataset")
        table.add_column(column, justify="left" if left else "right", overflow="fold")
    for index, client in enumerate(report["clients"]):
        histogram = " ".join(map(str, client["class_counts"]))
        graphs = (str(client["graphs"]),) if graph_set else ()
        held = (client["dataset"],) if listed else ()
        table.add_row(str(index), *held, *graphs, str(client["nodes"]), str(client["edges"]), histogram)
    console = output_console()
    console.print(table)
    kept = report["num_edges"] - report["cut_edges"]
    console.print(
        f"{report['num_nodes']} nodes, {report['num_edges']} edges: {report['cut_edges']} cut between clients, "
        f"{kept} kept ({kept / max(report['num_edges'], 1):.1%})"
    )
    return 0
