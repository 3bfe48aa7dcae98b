"""Waiting in tests for something another process does: a condition polled until it holds or time runs out."""

import time


def wait_until(condition, timeout_s: float = 5.0, interval_s: float = 0.02) -> bool:
    """Whether `condition()` held within `timeout_s`, polled every `interval_s` (and once more at the end)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval_s)
    return condition()
