"""The app's ``pyproject.toml``, read as ``flwr run`` reads it.

Replaces: ``flwr.common.config`` (not public API): ``get_project_config`` (the file parsed and
checked with Flower's rules; :func:`stamen.simulations.preflight.default_run_config` takes the run
config's defaults from it). ``key=value`` overrides are Stamen's own
(:func:`stamen.simulations.overrides.parse_overrides`, one-line errors), for ``stamen run`` and the benches alike.

Dropping it: where Flower has a public equivalent, import it here under this name; or read
the file with :mod:`tomllib`, accepting its own error messages.
"""

from __future__ import annotations

from flwr.common.config import get_project_config

__all__ = ["get_project_config"]
