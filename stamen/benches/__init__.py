"""Benchmarks of ``stamen bench``: one module per headline figure.

Each module has ``NAME``, ``HELP``, ``add_arguments(parser)``, ``run(args) -> dict``
(the record's ``results`` and ``setting``) and ``markdown(record) -> list[str]`` (its
table, written beside the record as ``<name>.md``). :mod:`stamen.cli.commands.bench` wires them
into the command line and writes the records; adding a benchmark touches no other.
"""
