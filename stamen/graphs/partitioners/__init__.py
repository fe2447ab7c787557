"""Stamen's own partitioners, one module each with its spec (:class:`stamen.graphs.names.PartitionerSpec`),
registered through entry points of group ``stamen.partitioners`` (pyproject.toml) as a researcher's are
(docs/extending.md). Each module imports nothing heavy at its top (a process that checks a run config
reads the specs); :func:`stamen.graphs.partition.partition_nodes` calls their functions.
"""
