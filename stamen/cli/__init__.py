"""The ``stamen`` command line: :mod:`stamen.cli.main` reads the words, one module of :mod:`stamen.cli.commands` per
command turns them into the typed config and calls the experiments and engines below."""
