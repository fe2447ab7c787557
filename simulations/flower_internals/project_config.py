"""The app's ``pyproject.toml`` and ``key=value`` overrides, read as ``flwr run`` reads them.

Replaces: ``flwr.common.config`` (not public API): ``get_project_config`` (the file parsed and
checked with Flower's rules; :func:`simulations.preflight.default_run_config` takes the run
config's defaults from it) and ``parse_config_args`` (``flwr run --run-config``'s
``key=value`` syntax, which ``stamen bench ... --set`` accepts).

Dropping it: where Flower has a public equivalent, import it here under these names; or
read the file with :mod:`tomllib` and the overrides with :func:`simulations.overrides.parse_overrides`
(``stamen run``'s parser), accepting their own error messages.
"""

from __future__ import annotations

from flwr.common.config import get_project_config, parse_config_args

__all__ = ["get_project_config", "parse_config_args"]
