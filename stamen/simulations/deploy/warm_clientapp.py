"""Warm ClientApps on a SuperNode host: the launcher's folder, its command, the SuperNode's environment.

Flower 1.42's SuperNode (``--isolation subprocess``, its default) starts Flower's
SuperExec, which starts ``flwr-clientapp`` by name, from ``PATH``, once per message.
A warm node differs in two things only, both outside Flower:

- one more long-lived process on the host, :mod:`stamen.simulations.deploy.clientapp_launcher`,
  which has PyTorch, PyG and Flower imported and serves each launch in itself, the
  ClientApp kept loaded (``resident``, the default), or forks a process per launch;
- the SuperNode's ``PATH`` starts with a folder holding a ``flwr-clientapp`` that
  hands each launch to that process (:mod:`stamen.simulations.deploy.clientapp_shim`) and
  falls back to Flower's own ``flwr-clientapp`` when it does not answer.

The folder (``<host folder>/clientapp``, mode 0700) holds that ``flwr-clientapp``; it
is Stamen's own, made and rewritten here only. The launcher's socket lives in a new
private folder under the system's temporary folder (``stamen-clientapp-*``, mode 0700,
made here): a Unix socket path must be short, a working folder need not be. The
launcher removes its socket and that folder when it stops.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from stamen.common.file_writes import atomic_write
from stamen.simulations.deploy import clientapp_shim

CLIENTAPPS = ("resident", "forked", "cold")  # how a SuperNode serves its messages; see LocalDeployment
SOCKET_PATH_LIMIT = 100  # bytes: a Unix socket path must fit in sun_path (108 on Linux)
SOCKET_FOLDER_PREFIX = "stamen-clientapp-"
SHIM = """#!{python} -I
# Made by Stamen: hands this ClientApp launch to the node's warm launcher, see {module}.
import runpy, sys
sys.argv[1:1] = [{socket!r}, {real!r}]
runpy.run_path({module!r}, run_name="__main__")
"""


def add_clientapps_option(parser: argparse.ArgumentParser) -> None:
    """``--clientapps resident|forked|cold`` (and the older ``--cold-clientapps``) on ``parser``."""
    parser.add_argument(
        "--clientapps",
        choices=CLIENTAPPS,
        default="resident",
        help="how a SuperNode serves its messages: resident (default; a warm launcher keeps the ClientApp "
        "loaded and serves every message), forked (the launcher forks a warm process per message) or cold "
        "(Flower's own flwr-clientapp, PyTorch and PyG imported afresh per message)",
    )
    parser.add_argument(
        "--cold-clientapps", dest="clientapps", action="store_const", const="cold", help=argparse.SUPPRESS
    )


@dataclass(frozen=True)
class WarmClientApp:
    """The files of one node's warm launcher."""

    folder: Path
    socket_folder: Path
    resident: bool = True  # the launcher serves launches in itself (False: forks one process per launch)

    @property
    def socket(self) -> Path:
        return self.socket_folder / "launcher.sock"

    @property
    def bin(self) -> Path:
        """The folder put first on the SuperNode's ``PATH``."""
        return self.folder / "bin"

    def launcher_command(self, runtime_port: int) -> list[str]:
        """The launcher for the SuperNode whose Runtime API listens on ``runtime_port``."""
        return [
            sys.executable,
            "-m",
            "stamen.simulations.deploy.clientapp_launcher",
            "--socket",
            str(self.socket),
            "--runtime-port",
            str(runtime_port),
            *(["--resident"] if self.resident else []),
        ]

    def supernode_environment(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with this node's ``flwr-clientapp`` first on ``PATH`` (the SuperNode passes it on to SuperExec)."""
        return {**env, "PATH": f"{self.bin}{os.pathsep}{env.get('PATH', '')}"}


def prepare_warm_clientapp(folder: Path, real_flwr_clientapp: str, resident: bool = True) -> WarmClientApp:
    """Make ``folder`` (mode 0700) with the stand-in ``flwr-clientapp``; return its files.

    ``resident``: the launcher keeps the ClientApp loaded and serves every launch in
    itself; ``False``: it forks a process per launch.

    ``real_flwr_clientapp`` is Flower's executable, for launches the launcher does not
    take. Refuses a ``folder`` that is a link, not a folder, or not this user's. The
    socket's folder is made new (see the module's docstring).
    """
    folder = Path(folder).absolute()
    for path in (folder, folder / "bin"):
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            raise FileExistsError(f"{path} is a link or a file; Stamen will not use it for the ClientApp launcher")
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.stat()
        if info.st_uid != os.getuid():
            raise PermissionError(f"{path} belongs to another user; the ClientApp launcher needs a folder of its own")
        os.chmod(path, 0o700)
    warm = WarmClientApp(folder, Path(tempfile.mkdtemp(prefix=SOCKET_FOLDER_PREFIX)), resident)  # mode 0700, new
    if len(os.fsencode(str(warm.socket))) > SOCKET_PATH_LIMIT:
        warm.socket_folder.rmdir()
        raise ValueError(
            f"{warm.socket} is too long for a Unix socket ({SOCKET_PATH_LIMIT} bytes at most); "
            "set TMPDIR to a shorter folder"
        )
    shim = warm.bin / "flwr-clientapp"
    text = SHIM.format(
        python=sys.executable, module=clientapp_shim.__file__, socket=str(warm.socket), real=real_flwr_clientapp
    )
    atomic_write(shim, text, mode=stat.S_IRWXU)  # a SuperExec never sees half a script
    return warm
