"""Stamen's own learning tasks, one package each: its spec in ``__init__.py`` (no torch), its client part in
``client.py`` (:class:`stamen.client.tasks.ClientTask`), its model where it has one of its own.

Each registers through an entry point of group ``stamen.tasks`` (pyproject.toml), as a researcher's task
package does (docs/extending.md); :data:`stamen.contract.tasks.TASKS` collects them.
"""
