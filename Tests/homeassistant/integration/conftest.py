"""The cast2mqtt custom integration (custom_components/cast2mqtt) in a real Home Assistant: the
fixtures of this folder's modules, which share one run.

One broker, cast-sim with two devices, the bridge and Home Assistant per module (starting Home
Assistant takes most of a run's time); Home Assistant reaches the broker through a TCPProxy so a
test can cut its connection alone. Before every test the `fresh` fixture resets both simulated
devices (a reboot: no app, volume 0.5, nothing recorded) and waits until the bridge and Home
Assistant show that, so each test stands alone and can fail alone. A test that stops the bridge
or cuts a connection puts it back in `finally`. Every wait is bounded; nothing asserts timings.

One run for the whole folder: the fixtures here are package-scoped (the parent conftest's
are per module), so its modules share the broker, cast-sim, the bridge and Home Assistant as
the one module they were split from did. The modules run in the order of their names (test_1_
... test_5_): test_5_devices_and_restarts restarts Home Assistant and ends with the check of its
log over the whole run.
"""

from __future__ import annotations

import pytest

from ha_calls import flow
import fixtures
from harness import HomeAssistant, TCPProxy, wait_for
from integration_env import HOME_ASSISTANT, KITCHEN as KITCHEN_ENTITY, KITCHEN_ID, TV, TV_ID, Env, device_ready

# requirements, workdir, broker, mqtt, sim, bridge (fixtures.py), one set for the whole folder.
globals().update(fixtures.registered("package"))


@pytest.fixture(scope="package")
def ha_link(broker) -> TCPProxy:
    proxy = TCPProxy(broker.port)
    yield proxy
    proxy.stop()


@pytest.fixture(scope="package")
def ha(workdir, broker, ha_link) -> HomeAssistant:
    h = HomeAssistant(workdir, broker, mqtt_port=ha_link.port, **HOME_ASSISTANT)
    yield from fixtures.running(h)



@pytest.fixture(scope="package")
def env(sim, bridge, mqtt, ha, ha_link) -> Env:
    wait_for(lambda: mqtt.get("cast2mqtt/living_room_tv/availability") == b"online"
             and mqtt.get("cast2mqtt/kitchen/availability") == b"online", 30, what="both devices online on MQTT")
    # The entry, through the user flow (test_config_flow checks the flow's other branches).
    started = flow(ha, "", {"handler": "cast2mqtt", "show_advanced_options": False})
    done = flow(ha, f"/{started['flow_id']}", {"base_topic": "cast2mqtt"})
    assert done.get("type") == "create_entry", done
    return Env(sim, bridge, mqtt, ha, ha_link, done["result"]["entry_id"])



@pytest.fixture(autouse=True)
def fresh(env: Env):
    """Both devices rebooted to no app and volume 0.5, the bridge reconnected to them, Home
    Assistant showing it; the bridge and Home Assistant's broker link up."""
    env.link.restore()
    if env.bridge.process is None or not env.bridge.process.alive():
        env.bridge.start()
    availability = {topic: env.observer.count.get(f"cast2mqtt/{topic}/availability", 0)
                    for topic in ("living_room_tv", "kitchen")}
    for device_id in (TV_ID, KITCHEN_ID):
        env.sim.reset(device_id)
    for topic, before in availability.items():
        # The bridge saw the reboot (offline) and is back (online).
        wait_for(lambda topic=topic, before=before:
                 env.observer.count.get(f"cast2mqtt/{topic}/availability", 0) >= before + 2
                 and env.observer.get(f"cast2mqtt/{topic}/availability") == b"online", 30,
                 what=f"{topic} to reconnect after the reset")
    for entity_id, topic in ((TV, "living_room_tv"), (KITCHEN_ENTITY, "kitchen")):
        wait_for(lambda entity_id=entity_id, topic=topic: device_ready(env, entity_id, topic), 30,
                 what=f"{entity_id} to be off at volume 0.5")
    yield
