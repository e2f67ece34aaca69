"""`homeassistant.discovery: per_entity` against a real Home Assistant, and the switch to the
default `device` mode: the same entities, once each, with the same entity ids."""

from __future__ import annotations

import pytest

from harness import KITCHEN, LIVING_ROOM, Bridge, log_problems, wait_for
from test_discovery import BRIDGE_ENTITIES, KT, LR, available_entities, entities, wait_available

LR_ID, KITCHEN_ID = LIVING_ROOM[1], KITCHEN[1]


@pytest.fixture(scope="module")
def bridge(workdir, broker, sim) -> Bridge:
    b = Bridge(workdir, broker, sim.static_devices(), homeassistant={"discovery": "per_entity"})
    b.start()
    yield b
    b.stop()


def registry_ids(ha) -> dict[str, str]:
    """entity_id -> unique_id of every cast2mqtt entity."""
    return {e["entity_id"]: e["unique_id"] for e in ha.entity_registry() if e["unique_id"].startswith("cast2mqtt_")}


def discovery_topics(ha, identifier: str) -> set[str]:
    """The discovery topics Home Assistant holds for the entities of a device (MQTT debug info)."""
    device = next(d for d in ha.device_registry() if ["mqtt", identifier] in d["identifiers"])
    info = ha.ws({"type": "mqtt/device/debug_info", "device_id": device["id"]})[0]
    return {e["discovery_data"]["topic"] for e in info["entities"]}


def test_per_entity_configs(bridge, ha, mqtt):
    wait_for(lambda: ha.entities_of(f"cast2mqtt_{LR_ID}") == entities(LR)
             and ha.entities_of(f"cast2mqtt_{KITCHEN_ID}") == entities(KT)
             and ha.entities_of("cast2mqtt_bridge") == BRIDGE_ENTITIES, 60, 0.5, "the entities")
    wait_available(ha, available_entities())
    configs = {t for t, p in mqtt.topics("homeassistant/").items() if p}
    assert not any(t.startswith("homeassistant/device/") for t in configs), configs
    assert f"homeassistant/sensor/cast2mqtt_{LR_ID}/state/config" in configs
    assert len(discovery_topics(ha, f"cast2mqtt_{LR_ID}")) == len(entities(LR))
    assert not log_problems(ha.log()), log_problems(ha.log())


def test_switching_to_device_mode_keeps_the_entities(bridge, ha, mqtt):
    before = registry_ids(ha)
    bridge.stop()
    bridge.homeassistant = {"discovery": "device"}
    bridge.start()
    wait_for(lambda: mqtt.get(f"homeassistant/device/cast2mqtt_{LR_ID}/config")
             and not mqtt.get(f"homeassistant/sensor/cast2mqtt_{LR_ID}/state/config"), 30, 0.2, "the device config")
    wait_for(lambda: discovery_topics(ha, f"cast2mqtt_{LR_ID}") == {f"homeassistant/device/cast2mqtt_{LR_ID}/config"},
             60, 0.5, "Home Assistant to take the entities from the device config")
    wait_for(lambda: registry_ids(ha) == before, 60, 0.5, "the same entities with the same ids")
    wait_available(ha, available_entities())
    assert not log_problems(ha.log()), log_problems(ha.log())
