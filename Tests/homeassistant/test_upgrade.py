"""A user's upgrade: Home Assistant from the oldest supported release to the newest, with the
integration and the bridge, on one configuration.

On the oldest release (HA_UPGRADE_FROM_HASS, its `hass`) the integration is set up as a user
does: the bridge's devices, each one device shared by the MQTT integration and this entry; the
living room's device put in an area; an automation that sets the living room player's volume.
Then the newest release (HASS) starts on the same configuration: Home Assistant migrates its
registries (since 2026.8 it splits a device shared by two config entries into one per entry),
and the integration makes them one device again (device_link.py). After the upgrade: one device
per Cast device, the media player on it under the same entity id, still in the area, the
automation still there and still driving the player, and no warning about the integration or the
bridge in Home Assistant's log.

scripts/test runs this module in the newest version's end-to-end run, with the oldest version's
`hass`; without HA_UPGRADE_FROM_HASS (a run by hand) it is skipped, under CI=true it fails.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

import pytest
import requests

from ha_calls import flow
import fixtures
from harness import HASS, KITCHEN, LIVING_ROOM, ROOT, HomeAssistant, log_records, wait_for

OLD_HASS = os.environ.get("HA_UPGRADE_FROM_HASS", "")
INTEGRATION = pathlib.Path(os.environ.get("CAST2MQTT_INTEGRATION", str(ROOT / "custom_components" / "cast2mqtt")))
LR_ID, KT_ID = LIVING_ROOM[1], KITCHEN[1]
PLAYER = "media_player.living_room_tv"
AUTOMATION_ID = "cast2mqtt_upgrade_check"


@pytest.fixture(scope="module")
def ha(workdir, broker, requirements):
    if not OLD_HASS:
        reason = "HA_UPGRADE_FROM_HASS (the oldest supported release's hass) is not set"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    config = workdir / "ha-config"
    config.mkdir(parents=True, exist_ok=True)
    (config / "automations.yaml").write_text("[]\n")
    h = HomeAssistant(workdir, broker, hass=OLD_HASS, custom_components=[INTEGRATION],
                      extra_config="automation: !include automations.yaml\n")
    yield from fixtures.running(h)


def devices_of(ha: HomeAssistant, device_id: str) -> list[dict[str, Any]]:
    return [d for d in ha.device_registry() if ["mqtt", f"cast2mqtt_{device_id}"] in d["identifiers"]]


def entry_ids(ha: HomeAssistant, domain: str) -> list[str]:
    return [e["entry_id"] for e in ha.get("/api/config/config_entries/entry") if e["domain"] == domain]


def test_upgrade_from_the_oldest_supported_release_keeps_one_device(bridge, ha, mqtt, sim):
    # -- the oldest release, as a user sets it up ------------------------------------------------
    started = flow(ha, "", {"handler": "cast2mqtt", "show_advanced_options": False})
    done = flow(ha, f"/{started['flow_id']}", {"base_topic": "cast2mqtt"})
    assert done.get("type") == "create_entry", done
    ha.wait_state(PLAYER, "off", timeout=90)
    ours, mqtt_entry = entry_ids(ha, "cast2mqtt"), entry_ids(ha, "mqtt")
    device = wait_for(lambda: (d := devices_of(ha, LR_ID)) and len(d) == 1
                      and set(d[0]["config_entries"]) == {*ours, *mqtt_entry} and d[0],
                      90, 0.5, "the living room's one device, shared by the MQTT entry and ours")
    area = ha.ws({"type": "config/area_registry/create", "name": "Den"})[0]
    ha.ws({"type": "config/device_registry/update", "device_id": device["id"], "area_id": area["area_id"]})
    automation = {"id": AUTOMATION_ID, "alias": "cast2mqtt upgrade check", "triggers": [], "conditions": [],
                  "actions": [{"action": "media_player.volume_set",
                               "target": {"entity_id": PLAYER}, "data": {"volume_level": 0.3}}]}
    # 2024.11 reads the plural keys too (2024.10 introduced them).
    saved = requests.post(f"{ha.base}/api/config/automation/config/{AUTOMATION_ID}", headers=ha.headers(),
                          json=automation, timeout=30)
    assert saved.status_code == 200, saved.text
    ha.wait_state("automation.cast2mqtt_upgrade_check", "on", timeout=60)
    old_player = next(e for e in ha.entity_registry() if e["entity_id"] == PLAYER)
    assert ha.stop() is not None

    # -- the newest release on the same configuration --------------------------------------------
    ha.hass = HASS
    ha.start(timeout=300)  # the first start migrates every registry
    ha.login()
    ha.wait_state(PLAYER, "off", timeout=120)
    for device_id in (LR_ID, KT_ID):
        wait_for(lambda device_id=device_id: len(devices_of(ha, device_id)) == 1, 90, 0.5,
                 f"one device for {device_id} (found {devices_of(ha, device_id)})")
    device = devices_of(ha, LR_ID)[0]
    entries = {e["entity_id"]: e for e in ha.entity_registry()}
    player = entries[PLAYER]
    assert player["unique_id"] == old_player["unique_id"] and player["platform"] == "cast2mqtt"
    assert player["device_id"] == device["id"]
    # On the device the MQTT integration owns, with the bridge's entities.
    assert {e["platform"] for e in entries.values() if e.get("device_id") == device["id"]} == {"cast2mqtt", "mqtt"}
    assert (player.get("area_id") or device.get("area_id")) == area["area_id"]
    assert not [e for e in entries if e.startswith("media_player.living_room_tv_")], "a second player"
    # The automation still names the player, and drives it.
    stored = ha.get(f"/api/config/automation/config/{AUTOMATION_ID}")
    assert json.dumps(stored).count(PLAYER) == 1
    ha.call("automation", "trigger", entity_id="automation.cast2mqtt_upgrade_check")
    # The device's volume (a player that is off shows no volume attribute).
    wait_for(lambda: sim.state(LR_ID)["receiverStatus"]["volume"]["level"] == pytest.approx(0.3), 60, 0.5,
             "the automation's volume on the device")

    venv = os.environ.get("HA_VENV", "")
    problems = [text for level, _logger, text in log_records(ha.log())
                if level in ("WARNING", "ERROR", "CRITICAL")
                and "cast2mqtt" in (text.replace(venv, "") if venv else text)
                and "which has not been tested by Home Assistant" not in text]
    assert problems == [], "\n".join(problems)
