"""Experiment files: TOML files of run-config keys, given where ``key=value`` overrides go.

``stamen run -c exp.toml -c "lr=0.1"`` (or ``-c "exp.toml lr=0.1"``) reads ``exp.toml``'s
top-level keys as if they were typed as overrides at that place: later ones win. Flower's
``flwr run --run-config`` reads a ``.toml`` path too, but only alone; Stamen mixes them.
``stamen sweep --grid exp.toml`` reads one file whole: its top-level keys are the experiment's fixed values
and its ``[grid]`` table the swept ones (:func:`stamen.experiments.sweep.grid_file`); a key in both is refused.

Every problem with a file (missing, unreadable, not a regular file, over :data:`MAX_BYTES`,
not TOML, empty, a value that no run-config key can hold) is a ``ValueError`` of one line that
names the file and the problem.
"""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path
from typing import Any

from stamen.contract.key_spelling import kebab_keys

SUFFIX = ".toml"
MAX_BYTES = 1024 * 1024  # an experiment or grid file of settings: a thousand times the largest one written by hand


def is_experiment_file(word: str) -> bool:
    """``word`` names a TOML file (ends with ``.toml``) rather than a ``key=value`` override."""
    return word.endswith(SUFFIX) and "=" not in word


def read_toml(path: str) -> dict[str, Any]:
    """The TOML document at ``path`` (``~`` expanded), or a ValueError naming the file and the problem."""
    file = Path(path).expanduser()
    try:
        mode = file.stat().st_mode
        if stat.S_ISDIR(mode):
            raise ValueError(f"{path}: is a folder, not a TOML file")
        if not stat.S_ISREG(mode):  # a FIFO would block the read, a device never end it
            raise ValueError(f"{path}: is not a regular file (a device, FIFO or socket); give a TOML file")
        with file.open("rb") as stream:
            text = stream.read(MAX_BYTES + 1)
        if len(text) > MAX_BYTES:
            raise ValueError(f"{path}: is larger than {MAX_BYTES // 1024} KiB, too large for a TOML file of settings")
        return tomllib.loads(text.decode("utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path}: no such file; give the path of a TOML file of run-config keys") from None
    except PermissionError:
        raise ValueError(f"{path}: cannot be read (permission denied)") from None
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{path}: is not UTF-8 text, so not a TOML file") from None
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: is not valid TOML ({' '.join(str(error).split())})") from None


def run_config_file(path: str) -> dict[str, Any]:
    """The run-config keys of the experiment file ``path``: its top-level ``key = value`` lines.

    Keys are kebab-case (``num-server-rounds``) or snake_case (``num_server_rounds``), as in
    :func:`stamen.run`'s dict; they come back kebab-case, and one key in both spellings is a
    ValueError naming the file and both. A table (``[section]``) or a value no run-config key
    holds (an array, a date) is a ValueError naming the file; unknown keys are left to the run-config check, which
    names them and suggests the closest.
    """
    values = read_toml(path)
    if not values:
        raise ValueError(f"{path}: holds no run-config keys; give key = value lines, e.g. lr = 0.05")
    for key, value in values.items():
        if isinstance(value, dict):
            hint = " (a [grid] table is for stamen sweep --grid)" if key == "grid" else ""
            raise ValueError(
                f"{path}: [{key}] is a table; an experiment file holds run-config keys at its top level, "
                f"e.g. lr = 0.05{hint}"
            )
        if not is_scalar(value):
            raise ValueError(f"{path}: {key} = {value!r} is not a number, true/false or a quoted string")
    return kebab_keys(values, path)


def is_scalar(value: object) -> bool:
    """A value a run-config key can hold: a number, true/false or a string."""
    return isinstance(value, bool | int | float | str)
