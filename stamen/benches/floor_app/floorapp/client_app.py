"""The floor's ClientApp: the weights it receives go back unchanged, with a count for the average.

With the run config's ``imports`` (comma-separated module names), a client process first imports
those modules, at its first message, as an app's ClientApp imports its libraries; the reply's
``import-seconds`` says how long that took (0 on every later message of the process).
"""

import importlib
import re
import time

from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

app = ClientApp()
MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_imported: set[str] = set()  # the modules this process has imported for the floor


def _import(names: str) -> float:
    """Import each module of ``names`` not imported yet by this process; the seconds it took (0 when there was
    none to import: nothing is timed, so a busy machine's scheduling adds nothing)."""
    wanted = [name for name in (part.strip() for part in names.split(",")) if name and name not in _imported]
    if not wanted:
        return 0.0
    started = time.perf_counter()
    for name in wanted:
        if not MODULE.fullmatch(name):
            raise ValueError(f"imports: {name!r} is not a module name")
        importlib.import_module(name)
        _imported.add(name)
    return time.perf_counter() - started


@app.train()
def train(message: Message, context: Context) -> Message:
    seconds = _import(str(context.run_config.get("imports", "")))
    arrays = message.content.array_records["arrays"]
    metrics = MetricRecord({"n": 1, "import-seconds": seconds})
    content = RecordDict({"arrays": ArrayRecord(arrays.to_numpy_ndarrays()), "metrics": metrics})
    return Message(content=content, reply_to=message)
