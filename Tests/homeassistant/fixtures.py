"""The end-to-end fixtures' bodies, once: `conftest.py` registers them per test module and
`integration/conftest.py` per package (one run for that folder), each with its own scope."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator

import pytest

from harness import KITCHEN, LIVING_ROOM, Bridge, CastSim, HomeAssistant, Mosquitto, MQTTObserver, missing_requirements


def requirements() -> None:
    reason = missing_requirements()
    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)


def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    path = tmp_path_factory.mktemp("ha")
    yield path
    # Logs of a failed run are kept; pytest prunes old temporary directories itself.


def broker(requirements: None, workdir: pathlib.Path) -> Iterator[Mosquitto]:
    b = Mosquitto(workdir)
    yield b
    b.stop()


def mqtt(broker: Mosquitto) -> Iterator[MQTTObserver]:
    o = MQTTObserver(broker)
    yield o
    o.close()


def sim(requirements: None, workdir: pathlib.Path) -> Iterator[CastSim]:
    s = CastSim(workdir, [LIVING_ROOM, KITCHEN])
    yield s
    s.stop()


def bridge(workdir: pathlib.Path, broker: Mosquitto, sim: CastSim) -> Iterator[Bridge]:
    b = Bridge(workdir, broker, sim.static_devices())
    b.start()
    yield b
    b.stop()


def running(h: HomeAssistant) -> Iterator[HomeAssistant]:
    """A Home Assistant fixture's body: `h` started and set up (onboarding, MQTT), yielded, and
    stopped afterwards; the end of its log is printed when the start fails."""
    try:
        h.start()
        h.setup()
    except BaseException:
        print(h.log()[-6000:])
        h.stop()
        raise
    yield h
    h.stop()


def registered(scope: str) -> dict[str, object]:
    """Every fixture above, as pytest fixtures of `scope`, for a conftest's globals."""
    return {f.__name__: pytest.fixture(scope=scope, name=f.__name__)(f)
            for f in (requirements, workdir, broker, mqtt, sim, bridge)}
