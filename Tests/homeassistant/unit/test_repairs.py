"""Repair issues: a bridge too old for what the integration uses, a bridge offline for long (and one
never seen online), each cleared when its cause is gone; their texts exist with their placeholders."""

from __future__ import annotations

from datetime import timedelta
import json
import re

import pytest
from pytest_homeassistant_custom_component.common import (
    MockConfigEntry,
    async_fire_mqtt_message,
    async_fire_time_changed,
)

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import dt as dt_util

from custom_components.cast2mqtt import repairs
from custom_components.cast2mqtt.repairs import BRIDGE_OFFLINE_MINUTES, issue_id, missing_features, parse_version
from conftest import BASE, ROOT, TV, answer, make_entry, refused_expires_then_sent_again, until_published

TOO_OLD = "bridge_too_old_cast2mqtt"
OFFLINE = "bridge_offline_cast2mqtt"


def info(hass: HomeAssistant, version: str) -> None:
    async_fire_mqtt_message(hass, f"{BASE}/bridge/info", json.dumps({"version": version, "started_at": "x"}))


@pytest.mark.parametrize(("text", "parsed"), [
    ("0.1.0", (0, 1, 0)), ("v0.2.1-14-gabc1234", (0, 2, 1)), ("0.1.0-dirty", (0, 1, 0)), ("1.10.3", (1, 10, 3)),
    ("abc1234", None), ("", None), (None, None), ("0.1", None), ("0.1.0.5", None),
])
def test_versions(text: str | None, parsed: tuple[int, int, int] | None) -> None:
    assert parse_version(text) == parsed


def test_missing_features() -> None:
    assert missing_features("0.1.0", set()) == []
    assert missing_features("0.0.9", set()) == ["expires", "wait"]
    assert missing_features("abc1234", set()) == []  # unknown age: only what it refused counts
    assert missing_features("abc1234", {"wait"}) == ["wait"]
    assert issue_id("clock_skew", "Home/Cast2MQTT") == "clock_skew_home_cast2mqtt"


async def test_a_bridge_that_reports_an_older_version(hass: HomeAssistant, mqtt_mock, loaded: MockConfigEntry) -> None:
    registry = ir.async_get(hass)
    info(hass, "0.0.7")
    await hass.async_block_till_done()
    issue = registry.async_get_issue("cast2mqtt", TOO_OLD)
    assert issue is not None and issue.translation_key == "bridge_too_old"
    assert issue.translation_placeholders == {"base_topic": BASE, "version": "0.0.7", "minimum": "0.1.0",
                                              "features": "expires, wait"}
    info(hass, "v0.1.0-3-g1234567")
    await hass.async_block_till_done()
    assert registry.async_get_issue("cast2mqtt", TOO_OLD) is None


async def test_a_bridge_that_refuses_a_key(hass: HomeAssistant, mqtt_mock, loaded: MockConfigEntry) -> None:
    registry = ir.async_get(hass)
    info(hass, "abc1234")  # a build without a release version: its age is unknown
    task = hass.async_create_task(hass.services.async_call("media_player", "media_pause", {"entity_id": TV},
                                                           blocking=True))
    await refused_expires_then_sent_again(hass, mqtt_mock, task)  # it still works, without its deadline
    issue = registry.async_get_issue("cast2mqtt", TOO_OLD)
    assert issue is not None and issue.translation_placeholders is not None
    assert issue.translation_placeholders["features"] == "expires"
    assert issue.translation_placeholders["version"] == "abc1234"
    # The bridge restarts (perhaps upgraded): asked again, and the issue goes until it refuses again.
    async_fire_mqtt_message(hass, f"{BASE}/bridge/state", "offline")
    async_fire_mqtt_message(hass, f"{BASE}/bridge/state", "online")
    await hass.async_block_till_done()
    assert registry.async_get_issue("cast2mqtt", TOO_OLD) is None


async def test_a_bridge_offline_for_long(hass: HomeAssistant, mqtt_mock, loaded: MockConfigEntry) -> None:
    registry = ir.async_get(hass)
    async_fire_mqtt_message(hass, f"{BASE}/bridge/state", "offline")
    await hass.async_block_till_done()
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=BRIDGE_OFFLINE_MINUTES - 1))
    await hass.async_block_till_done()
    assert registry.async_get_issue("cast2mqtt", OFFLINE) is None  # a restart takes less
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=BRIDGE_OFFLINE_MINUTES, seconds=1))
    await hass.async_block_till_done()
    issue = registry.async_get_issue("cast2mqtt", OFFLINE)
    assert issue is not None and issue.translation_key == "bridge_offline"
    assert issue.translation_placeholders is not None
    assert issue.translation_placeholders["minutes"] == str(BRIDGE_OFFLINE_MINUTES)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", issue.translation_placeholders["since"])
    async_fire_mqtt_message(hass, f"{BASE}/bridge/state", "online")
    await hass.async_block_till_done()
    assert registry.async_get_issue("cast2mqtt", OFFLINE) is None


async def test_a_bridge_back_in_time_raises_nothing(hass: HomeAssistant, mqtt_mock, loaded: MockConfigEntry) -> None:
    async_fire_mqtt_message(hass, f"{BASE}/bridge/state", "offline")
    await hass.async_block_till_done()
    async_fire_mqtt_message(hass, f"{BASE}/bridge/state", "online")
    await hass.async_block_till_done()
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=BRIDGE_OFFLINE_MINUTES + 1))
    await hass.async_block_till_done()
    assert ir.async_get(hass).async_get_issue("cast2mqtt", OFFLINE) is None


async def test_a_bridge_never_seen_online(hass: HomeAssistant, mqtt_mock) -> None:
    entry = make_entry()
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    async_fire_time_changed(hass, dt_util.utcnow() + timedelta(minutes=BRIDGE_OFFLINE_MINUTES, seconds=1))
    await hass.async_block_till_done()
    assert ir.async_get(hass).async_get_issue("cast2mqtt", OFFLINE) is not None
    assert await hass.config_entries.async_unload(entry.entry_id)
    assert ir.async_get(hass).async_get_issue("cast2mqtt", OFFLINE) is None


def test_every_issue_has_its_texts_with_its_placeholders() -> None:
    strings = json.loads((ROOT / "custom_components/cast2mqtt/strings.json").read_text())
    source = (ROOT / "custom_components/cast2mqtt/repairs.py").read_text()
    for kind in repairs.ISSUE_KINDS:
        texts = strings["issues"][kind]
        assert texts["title"] and texts["description"], kind
        used = set(re.findall(r"\{(\w+)\}", texts["title"] + texts["description"]))
        # Every placeholder a text names is one the code passes for that kind.
        body = source.split(f"translation_key=ISSUE_{kind.upper()}", 1)[1].split("\n\n\n", 1)[0]
        passed = set(re.findall(r'"(\w+)":', body))
        assert used <= passed, (kind, used - passed)
