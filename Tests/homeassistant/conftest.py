"""Fixtures: one broker, one cast-sim with two devices, one bridge and one Home Assistant per test
module (starting Home Assistant takes most of a run's time; integration/ overrides them with one
set for the whole folder). integration/ resets the simulated devices before each of its tests (its
`fresh` fixture), so each stands alone; the
discovery modules check one bridge lifecycle in file order, each test saying what it leaves.

Without Home Assistant (scripts/lib/ha.sh's venv) or the built binaries the tests are skipped,
and under CI=true they fail instead. The unit tests in unit/ run in a pytest session of their own.
"""

from __future__ import annotations

import os
import pathlib

import pytest

from harness import (KITCHEN, LIVING_ROOM, Bridge, CastSim, HomeAssistant, Mosquitto, MQTTObserver,
                     missing_requirements)


@pytest.fixture(scope="module")
def requirements() -> None:
    reason = missing_requirements()
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
