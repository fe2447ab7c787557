"""A SuperNode's ClientApp kept loaded: every task of the node served in one long-lived process.

Flower 1.42's ``flwr-clientapp`` serves one message and exits. Even forked from a
process with PyTorch and PyG imported (:mod:`simulations.deploy.clientapp_launcher`),
each message then pays, before the app's first line:

- unpacking and hash-checking the app bundle (FAB), about 0.4 s;
- importing Stamen's own modules, where PyG compiles its layer templates, about 0.3 s;
- at least 1 s when the SuperNode is still receiving the message's arrays: Flower's
  object pull backs off for 1 s at the first miss, then 2, 4, ... (``PULL_INITIAL_BACKOFF``).

:class:`ResidentClientApp` serves a task with the same Runtime API calls, in the same
order, as Flower's ``run_clientapp`` (``flwr.supernode.runtime.run_clientapp``), and
with Flower's own functions for each step (pulling and inflating the message, pushing
the reply and the context). It differs in three things only:

1. **One install and load per FAB.** The FAB of a given hash is installed and its
   ClientApp loaded on the first task, then called again for later ones, as Flower's
   simulation engine calls one loaded ClientApp for every message an actor serves.
   A task for a FAB of another hash first forgets the modules the previous FAB's
   folder provided (``sys.modules`` and ``sys.path``), so the new app's code runs,
   never a stale copy under the same module names.
2. **A short pull back-off**: :data:`PULL_BACKOFF` seconds at the first miss, doubling
   up to :data:`PULL_BACKOFF_CAP` (Flower's parameters of the same function).
3. **No process per task**: there is nothing to fork, so the task's own threads (the
   heartbeat, PyTorch's pools) are harmless.

The numbers do not change: Stamen's handlers seed every draw from the run config, the
round and the client (``client.device.seed_device``), which is what lets the
in-process engine serve every client from one process with the same numbers as
Flower's engines (``tests/simulations/test_determinism.py``, the e2e comparisons); a
deployment served this way ends with the simulation's accuracy (``stamen bench deploy``).

Flower's runtime-dependency installation (``--allow-runtime-dependency-installation``)
is not offered here: such a launch is refused and served by Flower's own ``flwr-clientapp``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from logging import DEBUG, ERROR
from pathlib import Path

FLAGS_WITH_VALUE = {"--runtime-api-address", "--token", "--root-certificates", "--parent-pid"}  # flwr-clientapp's
FLAGS_ALONE = {"--insecure", "--allow-runtime-dependency-installation"}
PULL_BACKOFF = 0.01  # seconds after the first miss of an object the SuperNode is still receiving
PULL_BACKOFF_CAP = 0.05  # seconds, at most, between two tries (the SuperNode answers a pull in milliseconds)


def flag_values(argv: list[str]) -> dict[str, str]:
    """``flwr-clientapp``'s flags in ``argv`` and their values ("" for a flag alone); ValueError on anything else."""
    values: dict[str, str] = {}
    items = iter(argv)
    for flag in items:
        if flag in FLAGS_ALONE:
            values[flag] = ""
        elif flag in FLAGS_WITH_VALUE:
            value = next(items, None)
            if value is None:
                raise ValueError(f"{flag} needs a value")
            values[flag] = value
        else:
            raise ValueError(f"unexpected argument {flag[:40]!r}")
    return values


@dataclass(frozen=True)
class TaskArguments:
    """What Flower's SuperExec passed to ``flwr-clientapp`` for one task."""

    runtime_api_address: str
    token: str
    insecure: bool
    root_certificates: Path | None

    @classmethod
    def parse(cls, argv: list[str]) -> TaskArguments:
        """From arguments :func:`~simulations.deploy.clientapp_launcher.check_arguments` accepted."""
        values = flag_values(argv)
        if "--allow-runtime-dependency-installation" in values:
            raise ValueError("a resident ClientApp does not install runtime dependencies")
        if "--insecure" in values and "--root-certificates" in values:
            raise ValueError("--insecure and --root-certificates contradict each other")
        certificates = values.get("--root-certificates")
        return cls(
            values["--runtime-api-address"],
            values["--token"],
            "--insecure" in values,
            Path(certificates) if certificates else None,
        )


@dataclass
class _LoadedApp:
    fab_hash: str
    folder: Path
    app: object  # flwr.clientapp.ClientApp


def forget_modules_under(folder: Path) -> list[str]:
    """Drop from ``sys.modules`` every module whose file lies under ``folder``, and ``folder`` from ``sys.path``.

    Returns the names dropped. Modules elsewhere (PyTorch, PyG, Flower) stay imported.
    """
    folder = folder.resolve()
    dropped = []
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve().is_relative_to(folder):
            del sys.modules[name]
            dropped.append(name)
    sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != folder]
    return dropped


class ResidentClientApp:
    """Serves one task at a time (:meth:`serve`) with the ClientApp of its FAB kept loaded."""

    def __init__(self) -> None:
        self.loaded: _LoadedApp | None = None
        self.tasks = 0

    def _client_app(self, run, fab) -> object:
        from flwr.cli.install import install_from_fab
        from flwr.clientapp.utils import get_load_client_app_fn

        if self.loaded is not None and self.loaded.fab_hash == fab.hash_str:
            return self.loaded.app
        if self.loaded is not None:
            forget_modules_under(self.loaded.folder)
            self.loaded = None
        folder = install_from_fab(fab.content, skip_prompt=True)  # checks the hash, as Flower's does
        load = get_load_client_app_fn(default_app_ref="", app_path=None, multi_app=True)
        app = load(run.fab_id, run.fab_version, fab.hash_str)
        self.loaded = _LoadedApp(fab.hash_str, Path(folder), app)
        return app

    def serve(self, argv: list[str]) -> int:
        """Serve the task ``argv`` names, as ``flwr-clientapp ARGV`` would; return its exit code."""
        from flwr.app import Message
        from flwr.app.error import Error
        from flwr.clientapp.client_app import LoadClientAppError
        from flwr.common.constant import ErrorCode, SubStatus
        from flwr.supercore import log
        from flwr.supercore.exit import ExitCode
        from flwr.supercore.heartbeat import HeartbeatSender, make_task_heartbeat_fn_http
        from flwr.supernode.runtime.run_clientapp import push_message, push_task_output

        task = TaskArguments.parse(argv)
        client, retry_invoker = _runtime_client(task)
        heartbeat = HeartbeatSender(make_task_heartbeat_fn_http(client))
        message = reply = context = None
        sub_status, details, code = SubStatus.FAILED, "ClientApp task failed due to unknown reason", ExitCode.SUCCESS
        try:
            heartbeat.start()
            message, context, run, fab = _pull_task_input(client)
            app = self._client_app(run, fab)
            reply = app(message=message, context=context)
            sub_status, details = SubStatus.COMPLETED, ""
        except Exception as ex:  # noqa: BLE001 - reported to the SuperNode as Flower's ClientApp reports it
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
                    except Exception as ex:  # noqa: BLE001
                        log(ERROR, "Failed to push reply message", exc_info=ex)
                        code = ExitCode.CLIENTAPP_COMMUNICATION_ERROR
                retry_invoker.max_tries = 1  # as Flower's exit handler: do not block on the last call
                push_task_output(client=client, context=context, sub_status=sub_status, details=details)
            finally:
                if heartbeat.is_running:
                    heartbeat.stop()
                client.close()
        self.tasks += 1
        log(DEBUG, "resident ClientApp: task %d served (exit %d)", self.tasks, code)
        return code


def _runtime_client(task: TaskArguments):
    """Flower's Runtime API client for ``task``, built as ``run_clientapp`` builds it."""
    from flwr.supercore.interceptors import RuntimeTokenHttpInterceptor, RuntimeVersionHttpInterceptor
    from flwr.supercore.retry import make_simple_http_retry_invoker
    from flwr.supercore.runtime import RuntimeHttpClient
    from flwr.supercore.runtime.tracing import RuntimeTracingInterceptor

    retry_invoker = make_simple_http_retry_invoker()
    certificates = None if task.root_certificates is None else task.root_certificates.read_bytes()
    client = RuntimeHttpClient.from_server_address(
        server_address=task.runtime_api_address,
        insecure=task.insecure,
        root_certificates=certificates,
        interceptors=[
            RuntimeTracingInterceptor(),
            RuntimeVersionHttpInterceptor(component_name="flwr-clientapp"),
            RuntimeTokenHttpInterceptor(task.token),
        ],
        retry_invoker=retry_invoker,
    )
    return client, retry_invoker


def _pull_task_input(client):
    """The task's message, context, run and FAB: Flower's ``pull_task_input`` with :data:`PULL_BACKOFF`."""
    from flwr.app import Message
    from flwr.common.serde import context_from_proto, fab_from_proto, run_from_proto
    from flwr.proto.node_pb2 import Node
    from flwr.proto.runtime_pb2 import PullAppMessagesRequest, PullTaskInputRequest
    from flwr.supercore.inflatable.inflatable_protobuf_utils import (
        make_confirm_message_received_fn_protobuf,
        make_pull_object_fn_protobuf,
    )
    from flwr.supercore.inflatable.inflatable_utils import pull_and_inflate_object_from_tree
    from flwr.supercore.task_identity import TaskIdentity

    inputs = client.PullTaskInput(PullTaskInputRequest())
    TaskIdentity.task_id = inputs.task_id
    TaskIdentity.run_id = inputs.run.run_id
    TaskIdentity.node_id = inputs.context.node_id
    context, run, fab = context_from_proto(inputs.context), run_from_proto(inputs.run), fab_from_proto(inputs.fab)
    pulled = client.PullMessages(PullAppMessagesRequest())
    if not pulled.messages_list:
        raise RuntimeError("No messages received from Runtime API")
    node = Node(node_id=context.node_id)
    tree = pulled.message_object_trees[0]
    message = pull_and_inflate_object_from_tree(
        tree,
        make_pull_object_fn_protobuf(client.PullObject, node, context.run_id),
        make_confirm_message_received_fn_protobuf(client.ConfirmMessageReceived, node, context.run_id),
        return_type=Message,
        initial_backoff=PULL_BACKOFF,
        backoff_cap=PULL_BACKOFF_CAP,
    )
    message.metadata.__dict__["_message_id"] = tree.object_id  # the deflated message lacks its own id, as in Flower
    return message, context, run, fab
