"""The base of the test harness (harness.py re-exports it): where the binaries and Home
Assistant are, free ports, bounded waits, and processes stopped by their PID."""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import time
from typing import Any, Callable


ROOT = pathlib.Path(__file__).resolve().parents[2]
CAST2MQTT = os.environ.get("CAST2MQTT_BIN", str(ROOT / ".build/debug/cast2mqtt"))
CAST_SIM = os.environ.get("CAST_SIM", str(ROOT / ".build/debug/cast-sim"))
HA_VENV = pathlib.Path(os.environ.get("HA_VENV", str(pathlib.Path(
    os.environ.get("CAST2MQTT_CACHE", str(pathlib.Path.home() / ".cache/cast2mqtt"))) / "homeassistant-2025.4.4")))
HASS = os.environ.get("HASS_BIN", str(HA_VENV / "bin/hass"))

CLIENT_ID = "http://127.0.0.1/"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate: Callable[[], Any], timeout: float = 30, interval: float = 0.2, what: str = "condition") -> Any:
    """Polls `predicate` until it returns something truthy (returned) or `timeout` seconds pass
    (AssertionError naming `what`). Exceptions from the predicate count as "not yet"."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            value = predicate()
            if value:
                return value
        except Exception as error:  # noqa: BLE001 - "not yet"
            last_error = error
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}"
                                 + (f" (last error: {last_error!r})" if last_error else ""))
        time.sleep(interval)


class Process:
    """One child process, output to a log file, stopped by its PID."""

    def __init__(self, name: str, argv: list[str], log: pathlib.Path, env: dict[str, str] | None = None,
                 cwd: str | None = None):
        self.name = name
        self.argv = argv
        self.log_path = log
        self._log = open(log, "ab")
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                     env=env, cwd=cwd)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send_signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.proc.pid, sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 20) -> int | None:
        """Sends `sig` and waits; SIGKILL after `timeout`. Returns the exit code."""
        if self.alive():
            try:
                os.kill(self.proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._log.close()
        return self.proc.returncode

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


def python_ok() -> bool:
    """The runner of the end-to-end tests: Python 3.11 or later with what the harness imports
    (scripts/test runs them with the oldest supported Home Assistant's venv, which has it all;
    the Home Assistant under test runs as a process of its own, HASS)."""
    if sys.version_info < (3, 11):
        return False
    try:
        import aiohttp  # noqa: F401
        import paho.mqtt  # noqa: F401
        import requests  # noqa: F401
    except ImportError:
        return False
    return True


def missing_bridge() -> str | None:
    """Why a suite that runs the daemon, cast-sim and mosquitto cannot run here, or None."""
    for path in (CAST2MQTT, CAST_SIM):
        if not os.access(path, os.X_OK):
            return f"{path} is missing (scripts/test builds it; or set CAST2MQTT_BIN / CAST_SIM)"
    if shutil.which("mosquitto") is None:
        return "mosquitto is not installed"
    return None


def need(reason: str | None) -> None:
    """Skips for `reason`, or fails under CI (CI=true: a missing service is a failure)."""
    if reason:
        import pytest

        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def missing_requirements() -> str | None:
    """Why the Home Assistant end-to-end tests cannot run here, or None."""
    if not python_ok():
        return ("the Home Assistant end-to-end tests need Python 3.11+ with aiohttp, paho-mqtt and requests "
                "(run them with a Home Assistant venv's python)")
    for path in (HASS, CAST2MQTT, CAST_SIM):
        if not os.access(path, os.X_OK):
            return f"{path} is missing (scripts/test builds and installs everything)"
    if shutil.which("mosquitto") is None:
        return "mosquitto is not installed"
    return None
