"""Devices coming and going, restarts of the bridge and of Home Assistant, hostile payloads, and
last the check of Home Assistant's log over the folder's whole run.
"""

from __future__ import annotations

import json

from harness import HA_VENV, HomeAssistant, log_records, wait_for
from integration_env import KITCHEN_ID, TV, KITCHEN, Env, switch_on


def restart_bridge(env: Env, exclude: list[str] | None = None) -> None:
    env.bridge.stop()
    env.bridge.exclude = exclude or []
    env.bridge.start()


def kitchen_gone(ha: HomeAssistant) -> None:
    wait_for(lambda: ha.state(KITCHEN) is None, 60, what="media_player.kitchen to go")
    assert KITCHEN not in {e["entity_id"] for e in ha.entity_registry()}
    wait_for(lambda: not any(["mqtt", f"cast2mqtt_{KITCHEN_ID}"] in d["identifiers"] for d in ha.device_registry()),
             30, what="the kitchen's device to go")


def kitchen_back(ha: HomeAssistant) -> None:
    ha.wait_state(KITCHEN, lambda s: s["state"] not in ("unavailable", "unknown"), timeout=60)
    assert KITCHEN in ha.entities_of(f"cast2mqtt_{KITCHEN_ID}")


def test_a_removed_device_loses_its_player_and_comes_back(env: Env):
    """`bridge/request/remove`: the bridge publishes `device_removed` and clears the kitchen's
    topics; its media player goes with its device. A restart finds the (static) kitchen again."""
    ha = env.ha
    env.observer.publish("cast2mqtt/bridge/request/remove", '{"device": "kitchen"}')
    try:
        kitchen_gone(ha)
        assert ha.state(TV)["state"] != "unavailable"
    finally:
        restart_bridge(env)
    kitchen_back(ha)


def test_a_device_excluded_while_away_loses_its_player(env: Env):
    """A restart with the kitchen excluded: that run never sees the kitchen, so there is no
    event; it clears the kitchen's retained topics and lists only the TV."""
    ha = env.ha
    try:
        restart_bridge(env, exclude=["Kitchen"])
        kitchen_gone(ha)
    finally:
        restart_bridge(env)
    kitchen_back(ha)


def test_a_device_missing_from_the_list_for_a_while_keeps_its_player(env: Env):
    """A restarting bridge lists devices as it finds them: missing from the list alone is not
    removal."""
    switch_on(env)  # Home Assistant shows the app's name (the marker below) only while on
    devices = env.observer.json("cast2mqtt/bridge/devices")
    try:
        env.observer.publish("cast2mqtt/bridge/devices", json.dumps([d for d in devices if d["id"] != KITCHEN_ID]))
        env.observer.publish("cast2mqtt/living_room_tv/receiver",
                             json.dumps({"app_name": "Marker", "volume": {"level": 0.5}}))
        # Home Assistant handles messages in order: once the marker shows, the short list was seen.
        env.ha.wait_state(TV, lambda s: s["attributes"].get("app_name") == "Marker")
        assert env.ha.state(KITCHEN) is not None
    finally:
        restart_bridge(env)  # it publishes its retained topics again, over the test's


def test_home_assistant_restart_keeps_the_media_players(env: Env):
    ha = env.ha
    before = {e["entity_id"]: e["unique_id"] for e in ha.entity_registry() if e["platform"] == "cast2mqtt"}
    ha.stop()
    ha.start()
    ha.login()
    for entity_id in (TV, KITCHEN):
        ha.wait_state(entity_id, lambda s: s["state"] not in ("unavailable", "unknown"), timeout=60)
    after = {e["entity_id"]: e["unique_id"] for e in ha.entity_registry() if e["platform"] == "cast2mqtt"}
    assert after == before


def test_hostile_payloads_change_nothing_they_should_not(env: Env):
    """Anything on the bridge's topics is parsed before use: bad payloads are dropped, the player
    stays, and nothing is logged (the last test checks the log)."""
    ha, mqtt = env.ha, env.observer
    switch_on(env)  # Home Assistant shows the app's name (the last message) only while on
    before = ha.wait_state(TV, lambda s: s["state"] not in ("unavailable", "unknown"))
    bad = [
        ("cast2mqtt/living_room_tv/state", b"exploded"),
        ("cast2mqtt/living_room_tv/state", b"\xff\xfe"),
        ("cast2mqtt/living_room_tv/availability", b"maybe"),
        ("cast2mqtt/living_room_tv/receiver", b"[1, 2, 3]"),
        ("cast2mqtt/living_room_tv/receiver", json.dumps({"volume": {"level": 7, "muted": "yes", "step": -1},
                                                          "app_name": ["x"]}).encode()),
        ("cast2mqtt/living_room_tv/media", b"{not json"),
        ("cast2mqtt/living_room_tv/media", json.dumps({
            "state": "playing", "media_session_id": 1, "position": "NaN", "duration": -5, "title": 5,
            "images": [1, {"url": "javascript:alert(1)"}], "supported_commands": "pause",
            "position_updated_at": "2026-99-99T00:00:00Z", "season": True, "track": "x", "queue": [1]}).encode()),
        ("cast2mqtt/living_room_tv/media", b'{"position": NaN, "duration": Infinity}'),
        ("cast2mqtt/bridge/devices", b"{}"),
        ("cast2mqtt/bridge/devices", json.dumps([{"id": "../x", "topic": "a/b"}, {"id": 5}, 7, None]).encode()),
        ("cast2mqtt/bridge/event", b'{"type": "device_removed", "id": {"a": 1}}'),
        ("cast2mqtt/bridge/event", b'{"type": "device_removed", "id": "not-a-known-device"}'),
        ("cast2mqtt/living_room_tv/response", b'{"id": ["x"], "status": "ok"}'),
        ("cast2mqtt/living_room_tv/response", b"\x00" * 1000),
        ("cast2mqtt/Bad Name/media", b"{}"),
        ("cast2mqtt/living_room_tv/media", b"x" * (2 * 1024 * 1024)),
    ]
    for topic, payload in bad:
        mqtt.publish(topic, payload)
    # A last good message shows that everything before it was handled.
    try:
        mqtt.publish("cast2mqtt/living_room_tv/receiver", json.dumps({"app_name": "After", "volume": {"level": 0.25}}))
        after = ha.wait_state(TV, lambda s: s["attributes"].get("app_name") == "After")
        assert after["state"] == before["state"]
        assert after["attributes"]["volume_level"] == 0.25
        assert ha.state(KITCHEN) is not None
    finally:
        restart_bridge(env)  # it publishes its retained topics again, over the bad ones


def test_home_assistant_logs_nothing_about_the_integration(env: Env):
    """No warning or error in home-assistant.log that concerns the integration. Not counted:
    Home Assistant's note that it has not tested a custom integration (logged for every one), the
    service errors the tests above cause on purpose (the websocket logs them), and the MQTT
    integration's records about the bridge's discovery configs (test_discovery.py checks those)."""
    venv = str(HA_VENV)
    # Home Assistant moves the previous run's log to home-assistant.log.1 when it starts (this
    # module restarts it once).
    previous = env.ha.config_dir / "home-assistant.log.1"
    log = (previous.read_text(errors="replace") if previous.exists() else "") + env.ha.log()
    problems = [
        text for level, logger, text in log_records(log)
        if level in ("WARNING", "ERROR", "CRITICAL")
        and "cast2mqtt" in text.replace(venv, "")
        and "which has not been tested by Home Assistant" not in text
        and not logger.startswith("homeassistant.components.websocket_api")
        and not logger.startswith("homeassistant.components.mqtt")
    ]
    assert problems == [], "\n".join(problems)
