"""``stamen config``: every run-config key by section, with its default, what it accepts and its help.

``stamen config KEY`` shows one key (with each choice's help and the algorithm that
reads it); ``--markdown`` prints the key table of ``docs/reference.md``, and
``python -m stamen.cli.commands.config`` puts it there (or into the Markdown file given
as its argument, between the same marker line). Everything comes from the
declaration in :mod:`stamen.contract.run_config` and the registries (an algorithm's keys from its spec,
:attr:`stamen.contract.algorithms.AlgorithmSpec.keys`); nothing here imports
PyTorch or Flower, so it answers at once.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stamen.common.file_writes import atomic_write
from stamen.common.registry import BUILT_IN
from stamen.common.suggest import did_you_mean
from stamen.contract.algorithms import ALGORITHMS, algorithm_sections, plugin_keys
from stamen.contract.keys import Key
from stamen.contract.run_config import KEYS, SECTIONS
from stamen.graphs.names import dataset_helps


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("config", help="list the run-config keys: defaults, choices, ranges, help")
    parser.add_argument("key", nargs="?", help="show one key, e.g. lr")
    parser.add_argument("--markdown", action="store_true", help="print the key table of docs/reference.md")
    parser.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    every = {**KEYS, **plugin_keys()}
    if args.key is not None and args.key not in every:
        suggestion = did_you_mean(args.key, every)
        raise ValueError(f"unknown run-config key {args.key!r}{suggestion}; `stamen config` lists every key")
    if args.markdown:
        print(markdown_table())
    elif args.key is not None:
        print(describe(every[args.key]))
    else:
        print(listing())
    return 0


def default_text(key: Key) -> str:
    """The default as one writes it in a run config (TOML)."""
    if isinstance(key.default, bool):
        return "true" if key.default else "false"
    if isinstance(key.default, str):
        return f"'{key.default}'" if key.default else "''"
    return repr(key.default)


def used_by(key: Key) -> list[str]:
    return [name for name, spec in ALGORITHMS.items() if key.name in spec.options]


def listing() -> str:
    """Every key by section: ``name = default   accepts   help``."""
    lines: list[str] = []
    every = {**KEYS, **plugin_keys()}
    width = max(len(name) + len(default_text(key)) for name, key in every.items()) + 3
    for name, help in sections():
        lines.append(f"[{name}] {help}")
        for key in every.values():
            if key.section == name:
                assignment = f"{key.name} = {default_text(key)}"
                lines.append(f"  {assignment:<{width}}  {key.help} ({key.accepted()})")
        lines.append("")
    lines.append('one key in full: stamen config KEY; set keys with stamen run -c "key=value ..."')
    return "\n".join(lines)


def sections(built_in: bool = False) -> list[tuple[str, str]]:
    """Every section with its help, in the order ``stamen config`` lists them: each core section followed by the
    algorithms' sections listed after it (:attr:`stamen.contract.keys.Section.after`), then the rest (a plug-in's
    own, its help saying where it came from). ``built_in``: only Stamen's own algorithms' sections."""
    placed: dict[str, list[tuple[str, str]]] = {}
    for section, name in algorithm_sections():
        origin = ALGORITHMS.origin(name)
        if built_in and origin != BUILT_IN:
            continue
        help = section.help or f"{name}'s options, a plug-in ({origin})"
        placed.setdefault(section.after if section.after in SECTIONS else "", []).append((section.name, help))
    listed: list[tuple[str, str]] = []
    for section in SECTIONS.values():
        listed += [(section.name, section.help), *placed.get(section.name, [])]
    return listed + placed.get("", [])


def describe(key: Key) -> str:
    helps = dict(sections())
    lines = [
        f"{key.name}: {key.help}",
        f"  section  {key.section} ({helps[key.section]})",
        f"  type     {key.kind}",
        f"  default  {default_text(key)}",
        f"  accepts  {key.accepted()}",
    ]
    if key.choices is not None:
        lines += [f"    {name:<16} {text}".rstrip() for name, text in key.choices.items()]
    if key.name == "dataset":  # a form, not choices: its datasets and forms with their help, from the registry
        lines += [f"    {name:<16} {text}".rstrip() for name, text in dataset_helps().items()]
    readers = used_by(key)
    if readers:
        lines.append(f"  read by  algorithm {', '.join(readers)}")
    return "\n".join(lines)


def markdown_table() -> str:
    """The run-config table of ``docs/reference.md``: one row per key, sections as bold rows."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    every = {**KEYS, **plugin_keys()}
    for name, help in sections(built_in=True):
        rows.append(f"| **{name}** | | {_cell(help)} |")
        for key in every.values():
            if key.section == name:
                rows.append(f"| `{key.name}` | `{default_text(key)}` | {_cell(_meaning(key))} |")
    return "\n".join(rows)


def _meaning(key: Key) -> str:
    text = key.help
    if key.choices is not None:
        if not any(key.choices.values()):
            return f"{text}: {', '.join(f'`{name}`' for name in key.choices)}"
        return f"{text}. " + "; ".join(f"`{name}`: {help}" for name, help in key.choices.items())
    return f"{text}; {key.accepted()}" if key.bound is not None or key.form is not None else text


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def update_table(path: Path | None = None) -> bool:
    """Replace the key table in the Markdown file at ``path`` by :func:`markdown_table`; True if it changed.

    ``path`` defaults to :data:`REFERENCE` (``docs/reference.md``). The table is the block of
    ``|`` lines after the line :data:`TABLE_MARK`.
    """
    path = REFERENCE if path is None else path
    lines = path.read_text().split("\n")
    if TABLE_MARK not in lines:
        raise ValueError(f"{path} has no line {TABLE_MARK!r} above its run-config table")
    start = lines.index(TABLE_MARK) + 1
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    text = "\n".join([*lines[:start], *markdown_table().split("\n"), *lines[end:]])
    if text == path.read_text():
        return False
    atomic_write(path, text)
    return True


TABLE_MARK = "<!-- generated by `stamen config --markdown` from stamen/contract/run_config.py; do not edit by hand -->"

REFERENCE = Path(__file__).resolve().parents[3] / "docs" / "reference.md"

if __name__ == "__main__":  # python -m stamen.cli.commands.config [FILE.md]; default: docs/reference.md
    print("updated" if update_table(Path(sys.argv[1]) if len(sys.argv) > 1 else None) else "unchanged")
