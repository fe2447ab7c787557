"""Stamen's FL algorithms, one package each: ``stamen/algorithms/<name>/``.

Each package's ``__init__`` holds the algorithm's spec (:class:`stamen.contract.algorithms.AlgorithmSpec`, its
run-config keys among it) and imports nothing but the contract, so that every process may read it cheaply; its
``server`` module holds the strategy factory, its ``client`` module the client part, and the package the math
that is the algorithm's own. The specs enter the registry as a researcher's plug-in does, through the
``stamen.algorithms`` entry points of Stamen's ``pyproject.toml``; the ServerApp and the ClientApp load the parts
by the dotted paths the spec names (:mod:`stamen.server.algorithms`, :mod:`stamen.client.algorithms`).

Folders shared by variants: ``fedsage`` (fedsage-local, fedsage+), ``fedper`` (fedper, fedrep: the shared
encoder), ``fedopt`` (fedadam, fedyogi, fedadagrad), ``fedmedian`` (fedmedian, fedtrimmedavg), ``krum`` (krum,
multikrum, bulyan); ``gcfl`` is GCFL and GCFL+ (``gcfl-sequence-length``).
"""
