"""The ``flwr-clientapp`` a warm SuperNode's SuperExec finds first on its ``PATH``.

Flower 1.42's SuperExec starts ``flwr-clientapp --runtime-api-address ADDR --token T
...`` for every message a SuperNode receives; a fresh Python then imports PyTorch,
PyG and Flower before the first line of the app runs. This stand-in hands those very
arguments to the node's :mod:`stamen.simulations.deploy.clientapp_launcher` over its Unix
socket, which forks a process with those imports already done and runs Flower's own
``flwr-clientapp`` in it; the stand-in waits and exits with that process's exit code.

If the launcher does not answer (not started, gone), it says so on stderr and becomes
Flower's real ``flwr-clientapp`` (``os.execv``): the message is still served, cold.

Run as ``python -I <this file> SOCKET REAL_FLWR_CLIENTAPP ARGS...`` (by the small
script :func:`stamen.simulations.deploy.warm_clientapp.prepare_warm_clientapp` writes): it
imports the standard library only, so it starts in a few tens of milliseconds.

Protocol, one connection per launch: the stand-in sends one JSON line
``{"argv": [...]}``; the launcher answers ``{"pid": N}`` once the process runs (or
``{"error": "..."}``) and ``{"exit": CODE}`` when it has ended; ``{"cold": "..."}``
hands the launch back, to be served by Flower's own ``flwr-clientapp``.
"""

from __future__ import annotations

import json
import os
import socket
import sys

CONNECT_TIMEOUT = 5.0  # seconds to reach the launcher; the launch itself may take as long as it takes


def _cold(real: str, argv: list[str], why: str) -> None:
    print(
        f"stamen: the warm ClientApp launcher does not serve this launch ({why}); starting a cold flwr-clientapp",
        file=sys.stderr,
    )
    sys.stderr.flush()
    os.execv(real, [real, *argv])


def forward(socket_path: str, real: str, argv: list[str]) -> int:
    """Hand ``argv`` to the launcher at ``socket_path`` and return the launched process's exit code."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT)
    try:
        sock.connect(socket_path)
        sock.sendall((json.dumps({"argv": argv}) + "\n").encode())
    except OSError as error:
        sock.close()
        _cold(real, argv, f"not answering at {socket_path}: {error.strerror or error}")
    sock.settimeout(None)  # the launcher answers when the process has started, then when it has ended
    with sock, sock.makefile("r") as replies:
        started = False
        for line in replies:
            reply = json.loads(line)
            if "cold" in reply:  # a launch the launcher hands back (e.g. one a resident ClientApp does not take)
                _cold(real, argv, f"it handed this launch back: {reply['cold']}")
            if "error" in reply:
                print(f"stamen: the ClientApp launcher refused this launch: {reply['error']}", file=sys.stderr)
                return 2
            if "pid" in reply:
                started = True
            if "exit" in reply:
                return int(reply["exit"])
    if not started:  # the connection closed before anything ran (a launcher stopping): serve it cold
        _cold(real, argv, "it closed the connection before starting anything")
    print("stamen: lost the ClientApp launcher while the ClientApp ran", file=sys.stderr)
    return 1


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: clientapp_shim.py SOCKET REAL_FLWR_CLIENTAPP [flwr-clientapp arguments]")
    sys.exit(forward(sys.argv[1], sys.argv[2], sys.argv[3:]))
