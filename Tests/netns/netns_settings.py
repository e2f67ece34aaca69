"""The settings of the tests on a real network (conftest.py re-exports them): the binaries, the
bridge's timings the bounds are computed from, `need` and `report` (the times measured)."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest


ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts/lib"))
sys.path.insert(0, str(ROOT / "Tests/homeassistant"))


CAST2MQTT = os.environ.get("CAST2MQTT_BIN", str(ROOT / ".build/debug/cast2mqtt"))
CAST_SIM = os.environ.get("CAST_SIM", str(ROOT / ".build/debug/cast-sim"))

# The bridge's settings the bounds below are computed from (the contract's defaults, except a
# short reconnect backoff and MQTT keepalive so a run stays short).
HEARTBEAT_TIMEOUT = 15.0
REQUEST_TIMEOUT = 10.0
CONNECT_TIMEOUT = 10.0
RECONNECT_INITIAL = 0.5
RECONNECT_MAX = 4.0
JITTER = 1.2  # the backoff is scaled by a factor in 0.8-1.2
KEEPALIVE = 5
# Scheduling and delivery (device -> bridge -> broker -> observer) on a busy 2-core machine.
SLACK = 2.0


def need(reason: str | None) -> None:
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def report(what: str, seconds: float) -> None:
    """One line with a measured time, printed (pytest -s, or the captured output of a failure)
    and collected for the session's summary."""
    line = f"{what}: {seconds:.2f} s"
    MEASURED.append(line)
    print(f"[netns] {line}", flush=True)


MEASURED: list[str] = []
