"""The pure parts of ``gcfl_authors.py`` (GCFL beside its authors' code): pooled accuracies, the best and final
round of a run's per-round figures, and the markdown table of a record. No torch: tested alone
(tests/benchmarks/test_gcfl_authors_table.py)."""

from __future__ import annotations

import statistics
from typing import Any

AUTHORS_REPOSITORY = "github.com/Oxfordblue7/GCFL"


def pooled(counts: list[tuple[float, int]]) -> float:
    """Correct over total of ``(correct, total)`` pairs: the accuracy pooled over clients."""
    total = sum(n for _, n in counts)
    return sum(c for c, _ in counts) / total if total else float("nan")


def best_and_final(rounds: list[dict[str, float]], selector: str, figures: tuple[str, ...]) -> dict[str, Any]:
    """The figures at the last round and at the first round of the largest ``selector``, with that round."""
    best = max(rounds, key=lambda row: row[selector])  # max keeps the first of equals, as Stamen's summary does
    return {
        "best_round": int(best["round"]),
        "best": {key: best[key] for key in figures},
        "final": {key: rounds[-1][key] for key in figures},
    }


def splits_text(splits: list[dict[str, Any]]) -> str:
    """``N (r1, r2, ...)``: how many splits and their rounds."""
    return f"{len(splits)} ({', '.join(str(s['round']) for s in splits)})" if splits else "0"


def mean_std(values: list[float]) -> str:
    """``mean ± std`` in % (sample std; a single value has none)."""
    mean = 100 * statistics.fmean(values)
    return f"{mean:.1f} ± {100 * statistics.stdev(values):.1f}" if len(values) > 1 else f"{mean:.1f}"


def markdown_table(record: dict[str, Any]) -> str:
    """The side-by-side table of a record: per seed, each side's client-model test accuracy (best val / final)
    and its splits, then the mean ± std over the seeds."""
    seeds = record["seeds"]
    lines = [
        f"## gcfl-authors-{record['dataset'].lower()}",
        "",
        f"`{record['command']}` ({record['provenance'].get('commit')}), {record['provenance'].get('date')}: "
        f"{record['provenance'].get('platform')}, torch {record['provenance']['packages'].get('torch')}, "
        f"PyG {record['provenance']['packages'].get('torch-geometric')}.",
        "",
        f"GCFL on {record['dataset']}: their code ({AUTHORS_REPOSITORY}, files' digest "
        f"{record['authors_code']['digest']}) and Stamen's `gcfl` on the same 10 clients (Stamen's "
        f"`partitioner='random'` federation, train/val/test 0.8/0.1/0.1 per client, the seed). Settings: "
        f"{record['settings_text']}.",
        "",
        "Test accuracy (%) of the client models (each client's model after its local training of the round, pooled "
        "over the clients' test graphs; Stamen's `test_acc`) at the round of best pooled validation accuracy of the "
        "cluster models (as Stamen's summary picks its best round) / at the final round; splits: how many, "
        "(their rounds).",
        "",
        "| seed | authors' acc (best val / final) | authors' splits (rounds) | Stamen acc (best val / final) "
        "| Stamen splits (rounds) |",
        "|---|---|---|---|---|",
    ]
    for seed in sorted(seeds, key=int):
        a, s = seeds[seed]["authors"], seeds[seed]["stamen"]
        lines.append(
            f"| {seed} | {pair(a['clients'])} | {splits_text(a['splits'])} | "
            f"{pair(s['clients'])} | {splits_text(s['splits'])} |"
        )
    done = [seeds[k] for k in sorted(seeds, key=int)]
    if done:
        lines.append(
            f"| mean ± std | {_pairs([d['authors']['clients'] for d in done])} | "
            f"{_count([d['authors']['splits'] for d in done])} | {_pairs([d['stamen']['clients'] for d in done])} | "
            f"{_count([d['stamen']['splits'] for d in done])} |"
        )
    lines += [
        "",
        "Cluster models (each client's model after the round's aggregation; Stamen's `global_test_acc`), best val / "
        "final, and the authors' own reported figure (per client the best test accuracy cached at the splits and "
        "at the end, averaged over clients unweighted):",
        "",
        "| seed | authors' cluster models | authors' reported | Stamen cluster models | wall s authors / Stamen |",
        "|---|---|---|---|---|",
    ]
    for seed in sorted(seeds, key=int):
        a, s = seeds[seed]["authors"], seeds[seed]["stamen"]
        lines.append(
            f"| {seed} | {pair(a['clusters'])} | {100 * a['reported']:.1f} | {pair(s['clusters'])} | "
            f"{a['wall_seconds']:.0f} / {s['wall_seconds']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def pair(figures: dict[str, Any]) -> str:
    return " / ".join("-" if figures[k] is None else f"{100 * figures[k]:.1f}" for k in ("best", "final"))


def _pairs(all_figures: list[dict[str, Any]]) -> str:
    def one(key: str) -> str:
        values = [f[key] for f in all_figures]
        return "-" if None in values else mean_std(values)

    return f"{one('best')} / {one('final')}"


def _count(all_splits: list[list[dict[str, Any]]]) -> str:
    counts = [len(s) for s in all_splits]
    spread = f" ± {statistics.stdev(counts):.1f}" if len(counts) > 1 else ""
    return f"{statistics.fmean(counts):.1f}{spread}"
