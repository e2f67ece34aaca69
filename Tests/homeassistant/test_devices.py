"""One device per Cast device, without duplicate controls, on a bridge under a two-level base
topic, in a real Home Assistant with the integration (custom_components/cast2mqtt).

One scenario in steps (file order), each saying what it leaves:
- Home Assistant's MQTT discovery finds the bridge under `home/cast` (and not Zigbee2MQTT's
  device list under `zigbee2mqtt`); the discovered flow creates the entry.
- Each Cast device's page (the entity registry over the websocket API) holds the media player and
  the bridge's MQTT entities; those that repeat the media player are disabled by the integration
  and have no state, the others are enabled. Manufacturer and model are the bridge's.
- An entity the user enables again stays enabled (entry reload, bridge restart, Home Assistant
  restart); entities registered anew while the entry is loaded are disabled as they come.
- The option off enables every entity again; on, the duplicates go again.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

import pytest
import requests

from harness import KITCHEN, LIVING_ROOM, ROOT, Bridge, HomeAssistant, log_problems, log_records, wait_for
from test_discovery import DEVICE_OBJECTS

BASE = "home/cast"
LR_ID, KT_ID = LIVING_ROOM[1], KITCHEN[1]
LR, KT = "living_room_tv", "kitchen"
# What the media player repeats (custom_components/cast2mqtt/duplicates.py) and what it lacks.
DUPLICATES = {"state", "media_title", "media_artist", "media_album", "media_duration", "media_position", "artwork",
              "app", "volume", "mute", "play", "pause", "stop", "next", "previous", "load_url"}
KEPT = {"playback_rate", "subtitles", "audio_language", "last_command"}
CONDITIONAL = {"subtitles", "audio_language"}  # available only while the media has such tracks
PLATFORM = {obj: platform for platform, obj in DEVICE_OBJECTS}

INTEGRATION = pathlib.Path(os.environ.get("CAST2MQTT_INTEGRATION", str(ROOT / "custom_components" / "cast2mqtt")))
HOME_ASSISTANT = {"custom_components": [INTEGRATION]}

ZIGBEE2MQTT_DEVICES = [
    {"ieee_address": "0x00124b0022ac9c2e", "type": "Coordinator", "network_address": 0, "friendly_name": "Coordinator"},
    {"ieee_address": "0x0017880104e45517", "type": "Router", "friendly_name": "lamp", "model_id": "LWB010"},
]


@pytest.fixture(scope="module")
def bridge(workdir, broker, sim) -> Bridge:
    b = Bridge(workdir, broker, sim.static_devices(), base_topic=BASE)
    b.start()
    yield b
    b.stop()


def mqtt_entity(topic: str, obj: str) -> str:
    return f"{PLATFORM[obj]}.{topic}_{obj}"


def player(topic: str) -> str:
    return f"media_player.{topic}"


def registry(ha: HomeAssistant) -> dict[str, dict[str, Any]]:
    return {e["entity_id"]: e for e in ha.entity_registry()}


def flows_in_progress(ha: HomeAssistant) -> list[dict[str, Any]]:
    return [f for f in ha.ws({"type": "config_entries/flow/progress"})[0] if f["handler"] == "cast2mqtt"]


def entry_of(ha: HomeAssistant) -> dict[str, Any]:
    entries = [e for e in ha.get("/api/config/config_entries/entry") if e["domain"] == "cast2mqtt"]
    assert len(entries) == 1, entries
    return entries[0]


def device_page(ha: HomeAssistant, device_id: str) -> dict[str, dict[str, Any]]:
    """The registry entries of the Home Assistant device of a Cast device, by entity id."""
    devices = [d for d in ha.device_registry() if ["mqtt", f"cast2mqtt_{device_id}"] in d["identifiers"]]
    assert len(devices) == 1, devices
    return {e["entity_id"]: e for e in ha.entity_registry() if e.get("device_id") == devices[0]["id"]}


def expected_page(topic: str, enabled: set[str]) -> dict[str, str | None]:
    """entity id -> disabled_by: the media player and every MQTT entity, `enabled` ones enabled."""
    page: dict[str, str | None] = {player(topic): None}
    for obj in DUPLICATES | KEPT:
        page[mqtt_entity(topic, obj)] = None if obj in enabled else "integration"
    return page


def page_is(ha: HomeAssistant, device_id: str, topic: str, enabled: set[str]) -> bool:
    page = device_page(ha, device_id)
    return {e: r["disabled_by"] for e, r in page.items()} == expected_page(topic, enabled)


def wait_page(ha: HomeAssistant, device_id: str, topic: str, enabled: set[str], timeout: float = 90) -> None:
    try:
        wait_for(lambda: page_is(ha, device_id, topic, enabled), timeout, 0.5, f"the device page of {topic}")
    except AssertionError:
        page = {e: r["disabled_by"] for e, r in device_page(ha, device_id).items()}
        raise AssertionError(f"{topic}: {page} != {expected_page(topic, enabled)}") from None


def wait_states(ha: HomeAssistant, topic: str, enabled: set[str], timeout: float = 90) -> None:
    """Enabled entities have a state, disabled ones none (Home Assistant reloads the MQTT entry
    30 s after an entity was enabled; only then does an enabled MQTT entity get its state)."""
    def ok() -> bool:
        states = ha.states()
        return all((mqtt_entity(topic, obj) in states) == (obj in enabled)
                   for obj in DUPLICATES | KEPT - CONDITIONAL) and player(topic) in states
    try:
        wait_for(ok, timeout, 0.5, f"the states of {topic}")
    except AssertionError:
        states = ha.states()
        present = {obj for obj in DUPLICATES | KEPT if mqtt_entity(topic, obj) in states}
        raise AssertionError(f"{topic}: states for {sorted(present)}, expected {sorted(enabled)}") from None


# Home Assistant's MQTT integration clears the discovery topic of a disabled MQTT entity whose
# registry entry is removed; for device-based discovery that is the device's config topic, which
# the bridge had cleared already, and MQTT says so once per entity. Expected when the integration
# removes the duplicates it disabled of a device the bridge forgot (duplicates.py).
FORGOTTEN_DEVICE_CLEANUP = "No device components to cleanup for cast2mqtt_"


def assert_clean_log(ha: HomeAssistant) -> None:
    problems = [line for line in log_problems(ha.log()) if FORGOTTEN_DEVICE_CLEANUP not in line]
    problems += [line for line in ha.log().splitlines()
                 if "custom_components.cast2mqtt" in line and (" ERROR " in line or "Traceback" in line)]
    assert not problems, "home-assistant.log:\n" + "\n".join(problems[:20])


def set_option(ha: HomeAssistant, entry_id: str, hide: bool) -> None:
    started = requests.post(f"{ha.base}/api/config/config_entries/options/flow", headers=ha.headers(),
                            json={"handler": entry_id}, timeout=30).json()
    assert started.get("type") == "form" and started.get("step_id") == "init", started
    assert [f["name"] for f in started["data_schema"]] == ["hide_duplicates"]
    done = requests.post(f"{ha.base}/api/config/config_entries/options/flow/{started['flow_id']}",
                         headers=ha.headers(), json={"hide_duplicates": hide}, timeout=30).json()
    assert done.get("type") == "create_entry", done


def test_discovered_on_a_two_level_base_topic(bridge, ha, mqtt):
    """The bridge under home/cast is offered; Zigbee2MQTT's device list is not."""
    mqtt.publish("zigbee2mqtt/bridge/devices", json.dumps(ZIGBEE2MQTT_DEVICES), retain=True)
    flows = wait_for(lambda: flows_in_progress(ha), 60, 0.5, "a cast2mqtt discovery flow")
    assert [f["context"]["unique_id"] for f in flows] == [BASE], flows
    assert flows[0]["context"]["source"] == "mqtt"
    assert flows[0]["context"]["title_placeholders"] == {"base_topic": BASE}
    # The retained Zigbee2MQTT list arrived too (the subscription is `+/bridge/devices`): its flow
    # aborted, so the only flow is still the bridge's.
    wait_for(lambda: mqtt.get("zigbee2mqtt/bridge/devices"), 30, 0.2, "the Zigbee2MQTT list on the broker")
    assert [f["context"]["unique_id"] for f in flows_in_progress(ha)] == [BASE]
    done = requests.post(f"{ha.base}/api/config/config_entries/flow/{flows[0]['flow_id']}", headers=ha.headers(),
                         json={}, timeout=30).json()
    assert done.get("type") == "create_entry", done
    assert done["result"]["title"] == BASE
    entry = entry_of(ha)
    assert entry["state"] == "loaded"
    ha.wait_state(player(LR), "off", timeout=60)
    ha.wait_state(player(KT), "off", timeout=60)
    assert not flows_in_progress(ha)


def test_each_device_page_has_the_player_and_only_what_it_lacks(bridge, ha, mqtt):
    for device_id, topic in ((LR_ID, LR), (KT_ID, KT)):
        wait_page(ha, device_id, topic, KEPT)
        wait_states(ha, topic, KEPT)
    # The integration's mark is on what it disabled, nowhere else.
    entries = registry(ha)
    assert entries[mqtt_entity(LR, "volume")]["disabled_by"] == "integration"
    # The bridge's own device is untouched.
    bridge_device = next(d for d in ha.device_registry() if ["mqtt", "cast2mqtt_bridge_home_cast"] in d["identifiers"])
    assert all(e["disabled_by"] is None for e in entries.values() if e.get("device_id") == bridge_device["id"])
    assert_clean_log(ha)


def test_one_device_with_the_bridges_facts(bridge, ha, mqtt):
    """The media player and the MQTT entities are one device; manufacturer and model are what
    the bridge knows of the device (`<base>/<dev>/info`), left out when it knows nothing."""
    for device_id, topic, name in ((LR_ID, LR, LIVING_ROOM[0]), (KT_ID, KT, KITCHEN[0])):
        info = wait_for(lambda: mqtt.json(f"{BASE}/{topic}/info"), 30, 0.2, f"{topic}/info")
        # The harness's static devices are not asked eureka_info (cast-sim serves none on their
        # address), so the bridge knows neither: the config's device block leaves both out
        # (HomeAssistantTests checks known values) and the device shows none, no guess.
        config = wait_for(lambda: mqtt.json(f"homeassistant/device/cast2mqtt_{device_id}/config"), 30, 0.2, "config")
        for key in ("model", "manufacturer", "sw_version"):
            assert (key in config["device"]) == (info.get(key) is not None), (key, config["device"], info)
        device = next(d for d in ha.device_registry() if ["mqtt", f"cast2mqtt_{device_id}"] in d["identifiers"])
        assert device["identifiers"] == [["mqtt", f"cast2mqtt_{device_id}"]]
        assert device["name"] == name
        assert device["model"] == info.get("model"), (device, info)
        assert device["manufacturer"] == info.get("manufacturer"), (device, info)
        page = device_page(ha, device_id)
        assert page[player(topic)]["platform"] == "cast2mqtt"
        assert {e["platform"] for e in page.values()} == {"cast2mqtt", "mqtt"}


def test_a_user_enabled_entity_stays_enabled(bridge, ha, mqtt):
    """Volume enabled again by the user: enabled after an entry reload, a bridge restart and a
    Home Assistant restart; the other duplicates stay disabled."""
    volume = mqtt_entity(LR, "volume")
    ha.ws({"type": "config/entity_registry/update", "entity_id": volume, "disabled_by": None})
    enabled = KEPT | {"volume"}
    wait_page(ha, LR_ID, LR, enabled)
    wait_states(ha, LR, enabled)
    ha.wait_state(volume, lambda s: float(s["state"]) == 50, timeout=30)

    entry_id = entry_of(ha)["entry_id"]
    reloaded = requests.post(f"{ha.base}/api/config/config_entries/entry/{entry_id}/reload", headers=ha.headers(),
                             timeout=60)
    assert reloaded.status_code == 200, reloaded.text
    bridge.stop()
    bridge.start()
    ha.wait_state(player(LR), "off", timeout=60)
    wait_page(ha, LR_ID, LR, enabled)

    ha.stop()
    ha.start()
    ha.login()
    ha.wait_state(player(LR), "off", timeout=90)
    wait_page(ha, LR_ID, LR, enabled)
    wait_states(ha, LR, enabled)
    wait_page(ha, KT_ID, KT, KEPT)
    assert_clean_log(ha)


def test_entities_registered_anew_are_disabled_as_they_come(bridge, ha, mqtt):
    """The kitchen forgotten (its entities and configs go) and found again by a restart: its MQTT
    entities are registered anew while the entry is loaded, and the duplicates among them are
    disabled and leave the state machine."""
    mqtt.publish(f"{BASE}/bridge/request/remove", '{"device": "kitchen"}')

    def kitchen_entities() -> dict[str, str | None]:
        return {e: r["disabled_by"] for e, r in registry(ha).items() if r["platform"] == "mqtt" and f".{KT}_" in e}
    try:
        wait_for(lambda: not kitchen_entities(), 60, 0.5, "the kitchen's MQTT entities to go")
    except AssertionError:
        raise AssertionError(f"left: {kitchen_entities()}") from None
    bridge.stop()
    bridge.start()
    wait_page(ha, KT_ID, KT, KEPT)
    wait_states(ha, KT, KEPT)
    assert_clean_log(ha)


def test_the_option_off_enables_everything_and_on_hides_again(bridge, ha, mqtt):
    entry_id = entry_of(ha)["entry_id"]
    set_option(ha, entry_id, False)
    everything = DUPLICATES | KEPT
    for device_id, topic in ((LR_ID, LR), (KT_ID, KT)):
        wait_page(ha, device_id, topic, everything)
        wait_states(ha, topic, everything)
    ha.wait_state(mqtt_entity(KT, "state"), "off", timeout=30)
    assert entry_of(ha)["state"] == "loaded"

    # On again: every duplicate goes (turning the option on is the user asking for it, so the
    # volume the user had enabled goes too).
    set_option(ha, entry_id, True)
    for device_id, topic in ((LR_ID, LR), (KT_ID, KT)):
        wait_page(ha, device_id, topic, KEPT)
        wait_states(ha, topic, KEPT)
    assert_clean_log(ha)


def test_entities_discovered_while_the_player_is_there_are_disabled_as_they_come(bridge, ha, mqtt):
    """The kitchen's media player stays while its MQTT entities are discovered anew (its device
    config cleared and published again, with every entity enabled in between so that MQTT
    removes them all): each duplicate is disabled as it is registered, and none keeps a state."""
    entry_id = entry_of(ha)["entry_id"]
    topic = f"homeassistant/device/cast2mqtt_{KT_ID}/config"
    config = wait_for(lambda: mqtt.get(topic), 30, 0.2, "the kitchen's device config")
    set_option(ha, entry_id, False)
    wait_page(ha, KT_ID, KT, DUPLICATES | KEPT)
    wait_states(ha, KT, DUPLICATES | KEPT)

    def kitchen_mqtt_entities() -> set[str]:
        return {e for e, r in registry(ha).items() if r["platform"] == "mqtt" and f".{KT}_" in e}
    try:
        mqtt.publish(topic, "", retain=True)
        wait_for(lambda: not kitchen_mqtt_entities(), 60, 0.5, "the kitchen's MQTT entities to go")
        set_option(ha, entry_id, True)
        assert ha.state(player(KT)) is not None
    finally:
        mqtt.publish(topic, config, retain=True)
    wait_page(ha, KT_ID, KT, KEPT)
    wait_states(ha, KT, KEPT)
    wait_page(ha, LR_ID, LR, KEPT)
    assert_clean_log(ha)


def test_the_reconfigure_flow_reloads_the_entry_and_keeps_everything(bridge, ha, mqtt):
    """Reconfigure (the same base topic here: the flow's reload is what Home Assistant 2026.12
    refuses for an entry with an update listener): the entry reloads, the players come back on
    the same device with the same entity ids, and the duplicates stay hidden."""
    entry_id = entry_of(ha)["entry_id"]
    started = requests.post(f"{ha.base}/api/config/config_entries/flow", headers=ha.headers(), timeout=30,
                            json={"handler": "cast2mqtt", "entry_id": entry_id, "show_advanced_options": False}).json()
    assert started.get("type") == "form" and started.get("step_id") == "reconfigure", started
    done = requests.post(f"{ha.base}/api/config/config_entries/flow/{started['flow_id']}", headers=ha.headers(),
                         json={"base_topic": BASE}, timeout=30).json()
    assert done.get("type") == "abort" and done.get("reason") == "reconfigure_successful", done
    wait_for(lambda: entry_of(ha)["state"] == "loaded", 60, 0.5, "the entry to be loaded again")
    for device_id, topic in ((LR_ID, LR), (KT_ID, KT)):
        ha.wait_state(player(topic), "off", timeout=60)
        wait_page(ha, device_id, topic, KEPT)
    assert_clean_log(ha)


def test_disabling_the_entry_gives_the_controls_back(bridge, ha, mqtt):
    """The entry disabled (not removed): its media players are disabled with it, and every MQTT
    control it hid is enabled and has a state again; enabled again, the duplicates go again."""
    entry_id = entry_of(ha)["entry_id"]
    ha.ws({"type": "config_entries/disable", "entry_id": entry_id, "disabled_by": "user"})

    def page_without_the_entry(device_id: str, topic: str) -> bool:
        page = {e: r["disabled_by"] for e, r in device_page(ha, device_id).items()}
        expected = {**expected_page(topic, DUPLICATES | KEPT), player(topic): "config_entry"}
        return page == expected
    for device_id, topic in ((LR_ID, LR), (KT_ID, KT)):
        wait_for(lambda: page_without_the_entry(device_id, topic), 90, 0.5, f"{topic}'s controls back")
    for topic in (LR, KT):
        ha.wait_state(mqtt_entity(topic, "state"), "off", timeout=90)
        ha.wait_state(mqtt_entity(topic, "volume"), lambda s: float(s["state"]) == 50, timeout=90)
        # No player (2024.11 keeps a `restored` placeholder of the disabled entity, unavailable).
        state = ha.state(player(topic))
        assert state is None or state["state"] == "unavailable", state
    ha.ws({"type": "config_entries/disable", "entry_id": entry_id, "disabled_by": None})
    for device_id, topic in ((LR_ID, LR), (KT_ID, KT)):
        ha.wait_state(player(topic), "off", timeout=90)
        wait_page(ha, device_id, topic, KEPT)
        wait_states(ha, topic, KEPT)
    assert_clean_log(ha)


def test_home_assistant_logs_no_warning_about_the_integration_or_the_bridge(bridge, ha):
    """No warning or error in home-assistant.log that names the integration or the bridge's
    discovery configs, over this whole module (Home Assistant restarted once: the log of the
    first run is home-assistant.log.1). Not counted: Home Assistant's note that it has not tested
    a custom integration, and the MQTT integration's cleanup note for a forgotten device
    (FORGOTTEN_DEVICE_CLEANUP)."""
    previous = ha.config_dir / "home-assistant.log.1"
    log = (previous.read_text(errors="replace") if previous.exists() else "") + ha.log()
    venv = os.environ.get("HA_VENV", "")
    problems = [
        text for level, _logger, text in log_records(log)
        if level in ("WARNING", "ERROR", "CRITICAL")
        and "cast2mqtt" in (text.replace(venv, "") if venv else text)
        and "which has not been tested by Home Assistant" not in text
        and FORGOTTEN_DEVICE_CLEANUP not in text
    ]
    assert problems == [], "\n".join(problems)
