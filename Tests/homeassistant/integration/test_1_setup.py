"""The integration set up through its config flow: a media player per device, diagnostics.
"""

from __future__ import annotations

import json

from ha_calls import flow, service
from harness import wait_for
from integration_env import TV_ID, KITCHEN_ID, TV, KITCHEN, CHIME, Env


def test_config_flow_branches_and_a_media_player_per_device(env: Env):
    ha = env.ha
    started = flow(ha, "", {"handler": "cast2mqtt", "show_advanced_options": False})
    assert started.get("type") == "form" and started.get("step_id") == "user", started
    assert [f["name"] for f in started["data_schema"]] == ["base_topic"]
    # A wildcard is refused with a form error; the configured base topic is refused as a duplicate.
    bad = flow(ha, f"/{started['flow_id']}", {"base_topic": "cast2mqtt/#"})
    assert bad.get("errors") == {"base_topic": "invalid_topic"}, bad
    again = flow(ha, f"/{started['flow_id']}", {"base_topic": "cast2mqtt"})
    assert again.get("type") == "abort" and again.get("reason") == "already_configured", again

    # Each media player belongs to the device the bridge's MQTT discovery created, has the base
    # topic in its unique id and the device class of the Cast type (cast-sim's are video: TVs).
    wait_for(lambda: TV in ha.entities_of(f"cast2mqtt_{TV_ID}"), 30, what="the TV media player on the MQTT device")
    assert KITCHEN in ha.entities_of(f"cast2mqtt_{KITCHEN_ID}")
    registry = {e["entity_id"]: e for e in ha.entity_registry()}
    assert registry[TV]["platform"] == "cast2mqtt"
    assert registry[TV]["unique_id"] == f"cast2mqtt:{TV_ID}:media_player"
    assert ha.state(TV)["attributes"].get("device_class") == "tv"


def test_diagnostics_show_devices_and_responses_without_secrets(env: Env):
    ha = env.ha
    # A media-source clip: Home Assistant signs its URL (authSig=...), which must not show.
    service(ha, "media_player", "play_media", entity_id=TV, media_content_id=CHIME, media_content_type="music")
    ha.wait_state(TV, lambda s: "authSig=" in (s["attributes"].get("media_content_id") or ""))
    diagnostics = ha.get(f"/api/diagnostics/config_entry/{env.entry_id}")["data"]
    assert diagnostics["entry"]["data"] == {"base_topic": "cast2mqtt"}
    assert diagnostics["bridge"]["online"] is True and diagnostics["bridge"]["mqtt_connected"] is True
    devices = {d["topic"]: d for d in diagnostics["devices"]}
    assert set(devices) == {"living_room_tv", "kitchen"}
    assert devices["living_room_tv"]["availability"] == "online"
    assert devices["living_room_tv"]["media"]["content_id"].startswith(f"{ha.base}/media/local/chime.mp3")
    assert any(r["command"] == "load" and r["status"] == "ok" for r in diagnostics["last_responses"])
    assert devices["living_room_tv"]["receiver"]["session_id"] == "**REDACTED**"
    assert "authSig" not in json.dumps(diagnostics)
