"""The wheel's build hook: an installed (non-editable) Stamen carries the app's Flower config.

``flwr run`` needs the app's ``pyproject.toml`` (its Flower components and run-config defaults) beside
the code it stages (:func:`stamen.simulations.flower.stage_app`). A built wheel gets a copy in
``stamen/simulations/app/``; an editable install reads the checkout's own and must not get one: a
``stamen/`` folder in site-packages would stand in front of the editable mapping of the package.
"""

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

APP_FILES = {"pyproject.toml": "stamen/simulations/app/pyproject.toml", "README.md": "stamen/simulations/app/README.md"}


class AppConfigHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "standard":
            build_data["force_include"].update(APP_FILES)
