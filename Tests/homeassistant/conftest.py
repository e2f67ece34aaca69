"""Fixtures: one broker, one cast-sim with two devices, one bridge and one Home Assistant per test
module (starting Home Assistant takes most of a run's time). test_integration.py resets the
simulated devices before each of its tests (its `fresh` fixture), so each stands alone; the
discovery modules check one bridge lifecycle in file order, each test saying what it leaves.

Without Home Assistant (scripts/lib/ha.sh's venv) or the built binaries the tests are skipped,
and under CI=true they fail instead. The unit tests in unit/ run in a pytest session of their own.
"""

from __future__ import annotations

import os
import pathlib
import shutil

import pytest

import harness
from harness import Bridge, CastSim, HomeAssistant, Mosquitto, MQTTObserver

LIVING_ROOM = ("Living Room TV", "0123456789abcdef0123456789abcd01")
KITCHEN = ("Kitchen", "0123456789abcdef0123456789abcd02")


def _missing() -> str | None:
    if not harness.python_ok():
        return "the Home Assistant tests need Python 3.13 (run them with the HA venv's python)"
    for path in (harness.HASS, harness.CAST2MQTT, harness.CAST_SIM):
        if not os.access(path, os.X_OK):
            return f"{path} is missing (scripts/test builds and installs everything)"
    if shutil.which("mosquitto") is None:
        return "mosquitto is not installed"
    return None


@pytest.fixture(scope="module")
def requirements() -> None:
    reason = _missing()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory, request) -> pathlib.Path:
    path = tmp_path_factory.mktemp("ha")
    yield path
    # Logs of a failed run are kept; pytest prunes old temporary directories itself.


@pytest.fixture(scope="module")
def broker(requirements, workdir) -> Mosquitto:
    b = Mosquitto(workdir)
    yield b
    b.stop()


@pytest.fixture(scope="module")
def mqtt(broker) -> MQTTObserver:
    o = MQTTObserver(broker)
    yield o
    o.close()


@pytest.fixture(scope="module")
def sim(requirements, workdir) -> CastSim:
    s = CastSim(workdir, [LIVING_ROOM, KITCHEN])
    yield s
    s.stop()


@pytest.fixture(scope="module")
def bridge(workdir, broker, sim) -> Bridge:
    b = Bridge(workdir, broker, sim.static_devices())
    b.start()
    yield b
    b.stop()


@pytest.fixture(scope="module")
def ha(workdir, broker, request) -> HomeAssistant:
    # A test module may set HOME_ASSISTANT = {...}: keyword arguments of harness.HomeAssistant
    # (extra_config, custom_components, media_files).
    h = HomeAssistant(workdir, broker, **getattr(request.module, "HOME_ASSISTANT", {}))
    try:
        h.start()
        h.setup()
    except BaseException:
        print(h.log()[-6000:])
        h.stop()
        raise
    yield h
    h.stop()
