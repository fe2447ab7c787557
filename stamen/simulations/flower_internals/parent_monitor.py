"""Stopping a process when its parent is gone, also in the middle of a task.

Replaces: ``flwr.supercore.app_utils.start_parent_process_monitor`` (not public API), the
monitor ``flwr-clientapp`` starts with ``--parent-pid``: a daemon thread that checks every
0.2 s whether the parent process still exists and raises SIGINT in this process once it
does not (however the parent ended, SIGKILL included).

The resident ClientApp launcher (:mod:`stamen.simulations.deploy.clientapp_launcher`) serves tasks
in its own process, so it starts this monitor itself.

Dropping it: a few lines of our own do the same (a daemon thread that polls
``os.kill(parent, 0)`` and calls ``signal.raise_signal(signal.SIGINT)``); or use Flower's
if it becomes public.
"""

from __future__ import annotations

from flwr.supercore.app_utils import start_parent_process_monitor

__all__ = ["start_parent_process_monitor"]
