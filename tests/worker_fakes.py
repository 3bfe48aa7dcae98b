"""Runners for measurement workers under test (tests/test_worker.py): what the worker runs instead of run_job, chosen
by the request's `fake` entry."""

import os
import time
from pathlib import Path


def runner(request: dict) -> dict:
    fake = request.get("fake") or request.get("config", {}).get("fake", {})
    started = time.time()
    if fake.get("started"):  # tells the test the job is in flight
        Path(fake["started"]).write_text(str(os.getpid()))
    if fake.get("print"):
        print(fake["print"], flush=True)
    time.sleep(fake.get("sleep", 0))
    if fake.get("abort"):  # as a kernel fault that takes the process down
        os.abort()
    if fake.get("raise"):
        raise RuntimeError(fake["raise"])
    if fake.get("record"):  # a whole result, as a job's would be
        return {**fake["record"], "served_by": os.getpid(), "job": request.get("job"),
                "output": request.get("output"), "cubin": request.get("cubin"), "inputs_dir": request.get("inputs_dir")}
    return {"served_by": os.getpid(), "cwd": os.getcwd(),
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "job": request.get("job"), "output": request.get("output"), "cubin": request.get("cubin"),
            "inputs_dir": request.get("inputs_dir"), "started": started, "finished": time.time(),
            "overhead": {"startup_s": 123.0, "slot_wait_s": 0.001, "job_s": 0.01}}
