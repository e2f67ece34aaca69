"""Fixtures of the corpus replay: one broker, one cast-sim with a device (or a speaker group and
its members) of its own for every corpus case, one bridge for all of them. The broker, cast-sim
and the bridge come from Tests/homeassistant/harness.py; every process is stopped by its PID and
every wait is bounded. Without the binaries or mosquitto the tests are skipped, under CI=true they
fail."""

from __future__ import annotations

import json
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "Tests/homeassistant"))

from harness import Bridge, CastSim, Mosquitto, MQTTObserver, missing_bridge, need, wait_for  # noqa: E402

import corpus  # noqa: E402
from runner import Env  # noqa: E402

CASES = corpus.load_cases()

# LAUNCH → the app's RECEIVER_STATUS in cast-sim: long enough for a message the device sends
# while it launches (LAUNCH_STATUS) to go out first.
LAUNCH_LATENCY_MS = "600"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "case" in metafunc.fixturenames:
        metafunc.parametrize("case", CASES, ids=[c.test_id for c in CASES])


class Recorder(MQTTObserver):
    """The harness's observer (latest message per topic) that also keeps every message in order,
    so a case reads the events and app messages published since it started."""

    def __init__(self, broker: Mosquitto):
        self.log: list[tuple[str, bytes]] = []
        super().__init__(broker)

    def _on_message(self, client, userdata, message) -> None:
        with self.lock:
            self.log.append((message.topic, bytes(message.payload)))
        super()._on_message(client, userdata, message)

    def mark(self) -> int:
        with self.lock:
            return len(self.log)

    def since(self, mark: int, topic: str) -> list[bytes]:
        with self.lock:
            return [payload for t, payload in self.log[mark:] if t == topic]


@pytest.fixture(scope="session")
def requirements() -> None:
    need(missing_bridge())


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> pathlib.Path:
    return tmp_path_factory.mktemp("realdevices")


@pytest.fixture(scope="session")
def broker(requirements, workdir) -> Mosquitto:
    b = Mosquitto(workdir)
    yield b
    b.stop()


@pytest.fixture(scope="session")
def mqtt(broker) -> Recorder:
    o = Recorder(broker)
    yield o
    o.close()


@pytest.fixture(scope="session")
def sim(requirements, workdir) -> CastSim:
    config = workdir / "cast-sim-corpus.json"
    settings = corpus.sim_config(CASES)
    config.write_text(json.dumps(settings, indent=1))
    s = CastSim(workdir, [], extra=["--config", str(config), "--launch-latency-ms", LAUNCH_LATENCY_MS,
                                    "--log-level", "warning"],
                expected=len(settings["devices"]))
    yield s
    s.stop()


@pytest.fixture(scope="session")
def env(workdir, broker, mqtt, sim) -> Env:
    # Messages a device sent before anyone asked (a group's answer to the bridge's first
    # multizone GET_STATUS): in place before the bridge connects.
    for case in CASES:
        if case.replay.get("before_bridge"):
            for mode in case.replay["as"]:
                answer = sim.fault(case.device_id, {"action": "replay", "namespace": case.namespace,
                                                    "text": case.text(), "as": mode})
                assert answer.get("ok"), f"{case.test_id}: cast-sim refused the replay: {answer}"
    bridge = Bridge(workdir, broker, [{"host": d["host"], "name": d["name"], "id": d["id"]} for d in sim.devices])
    bridge.start()
    topics = sorted({corpus.slug(d["name"]) for d in sim.devices}
                    | {c.group_topic for c in CASES if c.group_topic})
    try:
        wait_for(lambda: all(mqtt.get(f"cast2mqtt/{t}/availability") == b"online" for t in topics), 90, 0.2,
                 "every simulated device and group online on MQTT")
    except AssertionError:
        offline = [t for t in topics if mqtt.get(f"cast2mqtt/{t}/availability") != b"online"]
        bridge.stop()
        raise AssertionError(f"not online after 90 s: {offline}\n{bridge.output()[-3000:]}")
    yield Env(mqtt=mqtt, sim=sim, cases={c.test_id: c for c in CASES})
    code = bridge.stop()
    assert code == 0, f"the bridge exited with {code}:\n{bridge.output()[-3000:]}"
