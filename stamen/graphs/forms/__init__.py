"""Stamen's own datasets and dataset forms, one module each with its spec
(:class:`stamen.graphs.names.DatasetSpec`), registered through entry points of group ``stamen.datasets``
(pyproject.toml) as a researcher's are (docs/extending.md). Each module imports nothing heavy at its top
(a process that checks a run config reads the specs and calls their ``check``); its reader imports the
parser it needs when called (:func:`stamen.graphs.datasets.load_dataset`,
:func:`stamen.graphs.graph_federation.load_graph_set`).
"""
