"""One ClientApp task served as ``flwr-clientapp`` serves it: heartbeat, inputs, the app's reply, the task's outcome.

Replaces: ``flwr.supernode.runtime.run_clientapp`` (``push_message``, ``push_task_output``;
:func:`serve_task` follows its ``run_clientapp``), ``flwr.supercore.heartbeat``
(``HeartbeatSender``, ``make_task_heartbeat_fn_http``), ``flwr.common.constant``
(``ErrorCode``, ``SubStatus``) and ``flwr.supercore.exit`` (``ExitCode``), none public API.

:func:`serve_task` makes the same Runtime API calls, in the same order, as Flower 1.42's
``run_clientapp`` and reports a failure as it does (the same error reply, sub-status,
details and exit code), with two differences the resident ClientApp
(:mod:`stamen.simulations.deploy.resident_clientapp`) needs: the ClientApp comes from ``load_app``
(which may return one loaded for an earlier task), and the object pull's back-off is given
(:func:`~stamen.simulations.flower_internals.runtime_api.pull_task_input`). It returns the exit
code instead of exiting, and leaves out what a process of its own would do (signal
handlers, telemetry events, runtime-dependency installation, which the resident ClientApp refuses).

Dropping it: once Flower can serve a SuperNode's tasks with one loaded ClientApp, drop the
resident ClientApp and this module; Flower's ``flwr-clientapp`` serves every task then.
"""

from __future__ import annotations

from collections.abc import Callable
from logging import ERROR
from pathlib import Path
from typing import Any

from flwr.app import Error, Message
from flwr.common import log
from flwr.common.constant import ErrorCode, SubStatus
from flwr.supercore.exit import ExitCode
from flwr.supercore.heartbeat import HeartbeatSender, make_task_heartbeat_fn_http
from flwr.supernode.runtime.run_clientapp import push_message, push_task_output

from stamen.simulations.flower_internals.app_loading import LoadClientAppError
from stamen.simulations.flower_internals.runtime_api import pull_task_input, runtime_client


def serve_task(
    *,
    runtime_api_address: str,
    token: str,
    insecure: bool,
    root_certificates: Path | None,
    load_app: Callable[[Any, Any], Any],
    pull_backoff: float,
    pull_backoff_cap: float,
) -> int:
    """Serve the task of ``token``: its message goes to ``load_app(run, fab)``'s ClientApp; return the exit code
    ``flwr-clientapp`` would exit with."""
    client, retry_invoker = runtime_client(runtime_api_address, token, insecure, root_certificates)
    heartbeat = HeartbeatSender(make_task_heartbeat_fn_http(client))
    message = reply = context = None
    sub_status, details, code = SubStatus.FAILED, "ClientApp task failed due to unknown reason", ExitCode.SUCCESS
    try:
        heartbeat.start()
        message, context, run, fab = pull_task_input(client, pull_backoff, pull_backoff_cap)
        app = load_app(run, fab)
        reply = app(message=message, context=context)
        sub_status, details = SubStatus.COMPLETED, ""
    except Exception as ex:  # reported to the SuperNode as Flower's ClientApp reports it
        error_code = ErrorCode.CLIENT_APP_RAISED_EXCEPTION
        reason = f"{type(ex)}:<'{ex}'>"
        if isinstance(ex, LoadClientAppError):
            error_code = ErrorCode.LOAD_CLIENT_APP_EXCEPTION
            reason = "An exception was raised when attempting to load `ClientApp`"
        log(ERROR, "ClientApp raised an exception", exc_info=ex)
        sub_status, details = SubStatus.FAILED, reason
        if message is not None:
            reply = Message(Error(code=error_code, reason=reason), reply_to=message)
        code = ExitCode.COMMON_APP_IMPORT_ERROR if isinstance(ex, ImportError) else ExitCode.TASK_PROC_EXCEPTION
    finally:
        try:
            if reply is not None and context is not None:
                try:
                    push_message(client, reply, context)
                except Exception as ex:
                    log(ERROR, "Failed to push reply message", exc_info=ex)
                    code = ExitCode.CLIENTAPP_COMMUNICATION_ERROR
            retry_invoker.max_tries = 1  # as Flower's exit handler: do not block on the last call
            push_task_output(client=client, context=context, sub_status=sub_status, details=details)
        finally:
            if heartbeat.is_running:
                heartbeat.stop()
            client.close()
    return code
