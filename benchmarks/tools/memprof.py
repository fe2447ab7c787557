"""Peak resident memory per function of Stamen's code during one `stamen ...` command, in this process.

A thread reads VmHWM (the kernel's resident high-water mark) every `interval` s, resets it
(/proc/self/clear_refs = 5) and charges the peak to the Stamen functions on the main thread's
stack at that moment and at the previous sample (a C call that holds the GIL delays the
sample to its return, still inside the same Stamen function). Usage:
  python memprof.py OUT.json -- <stamen args>
"""

import json
import os
import sys
import threading
import time

ROOT = os.getcwd() + "/"
sys.path.insert(0, os.getcwd())  # the code of the folder it runs in (not an installed copy)
out = sys.argv[1]
args = sys.argv[sys.argv.index("--") + 1 :]
main_ident = threading.main_thread().ident
peaks: dict[str, float] = {}
timeline: list[tuple[float, float, str]] = []
stop = threading.Event()
started = time.perf_counter()


def hwm_gb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024**2
    return 0.0


def stack_keys() -> list[str]:
    frame = sys._current_frames().get(main_ident)
    keys = []
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(ROOT) and "/.venv/" not in name:
            keys.append(f"{name[len(ROOT) :]}:{frame.f_code.co_name}")
        frame = frame.f_back
    return keys  # innermost first


def sample(interval: float = 0.05) -> None:
    previous: list[str] = []
    while not stop.wait(interval):
        peak = hwm_gb()
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        keys = stack_keys()
        for key in set(keys[:4] + previous[:4]):
            peaks[key] = max(peaks.get(key, 0.0), peak)
        if not timeline or abs(timeline[-1][1] - peak) > 0.05 or timeline[-1][2] != (keys[0] if keys else ""):
            timeline.append((round(time.perf_counter() - started, 2), round(peak, 3), keys[0] if keys else ""))
        previous = keys


if os.environ.get("MEMPROF_BATCH_NODES"):  # the in-process engine's batch size, for a before/after of the rounds
    import stamen.client.together

    stamen.client.together.BATCH_NODES = int(os.environ["MEMPROF_BATCH_NODES"])
thread = threading.Thread(target=sample, daemon=True)
thread.start()
sys.argv = ["stamen", *args]
code = 0
try:
    from stamen.cli.main import main

    code = main(args) or 0
except SystemExit as exit_:
    code = exit_.code
finally:
    stop.set()
    thread.join()
    with open(out, "w") as f:
        json.dump(
            {
                "args": args,
                "peaks_gb": dict(sorted(peaks.items(), key=lambda kv: -kv[1])),
                "timeline": timeline,
                "seconds": time.perf_counter() - started,
            },
            f,
            indent=1,
        )
sys.exit(code)
