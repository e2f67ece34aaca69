"""A bridge whose clock is 5 minutes off (a faked clock: the bridge's messages are stamped 5 minutes
ahead or behind; the machine's clock is not touched): actions still succeed, because the deadline
is relative; the skew is measured from fresh messages only, shown in diagnostics, corrects media
positions, and raises a repair issue naming it, which goes when the clocks agree again."""

from __future__ import annotations

from datetime import datetime, timedelta
import json
from typing import Any

from pytest_homeassistant_custom_component.common import MockConfigEntry, async_fire_mqtt_message

from homeassistant.core import HomeAssistant
from homeassistant.helpers import issue_registry as ir
from homeassistant.util import dt as dt_util

from custom_components.cast2mqtt.bridge import Bridge, rfc3339
from custom_components.cast2mqtt.clock import CLOCK_MIN_SAMPLES, ClockSkew
from custom_components.cast2mqtt.diagnostics import async_get_config_entry_diagnostics
from conftest import BASE, PLAYING, TV, answer, until_published

SKEW = timedelta(minutes=5)
ISSUE = "clock_skew_cast2mqtt"


def stamp(offset: timedelta) -> str:
    """Now, by a bridge clock that is `offset` from Home Assistant's."""
    return rfc3339(dt_util.utcnow() + offset)


def changes(hass: HomeAssistant, offset: timedelta, count: int = 5, *, retain: bool = False) -> None:
    """`count` fresh receiver documents (each a change: the volume moves), stamped by the bridge."""
    for step in range(count):
        async_fire_mqtt_message(hass, f"{BASE}/living_room_tv/receiver", json.dumps({
            "app_id": "CC1AD845", "volume": {"level": round(0.1 + step / 100, 2), "muted": False},
            "updated_at": stamp(offset)}), retain=retain)


def bridge_of(entry: MockConfigEntry) -> Bridge:
    bridge: Bridge = entry.runtime_data
    return bridge


def test_the_estimate_is_the_median_of_enough_samples() -> None:
    clock = ClockSkew(size=5, minimum=3)
    now = dt_util.utcnow()
    assert clock.seconds is None
    clock.add(now + timedelta(seconds=300), now)
    clock.add(now + timedelta(seconds=301), now)
    assert clock.seconds is None  # two samples are not enough
    # A late message (a document stamped long before it arrived) does not move the median.
    clock.add(now - timedelta(hours=2), now)
    assert clock.seconds == 300
    clock.add(now + timedelta(seconds=302), now)
    assert clock.seconds == 300.5
    assert clock.samples == 4
    # Only the newest samples count.
    for _ in range(5):
        clock.add(now, now)
    assert clock.seconds == 0
    # A timestamp further off than a year is not a clock.
    assert not clock.add(datetime(1970, 1, 1, tzinfo=dt_util.UTC), now)
    clock.clear()
    assert clock.seconds is None and clock.samples == 0


def test_times_are_corrected_only_beyond_jitter() -> None:
    clock = ClockSkew(size=5, minimum=1)
    now = dt_util.utcnow()
    clock.add(now + timedelta(seconds=0.4), now)
    assert clock.to_local(now) == now
    clock.clear()
    clock.add(now + timedelta(seconds=300), now)
    assert clock.to_local(now + timedelta(seconds=300)) == now


async def test_a_bridge_five_minutes_ahead(hass: HomeAssistant, mqtt_mock, loaded: MockConfigEntry) -> None:
    await _skewed_bridge(hass, mqtt_mock, loaded, SKEW, "+300")


async def test_a_bridge_five_minutes_behind(hass: HomeAssistant, mqtt_mock, loaded: MockConfigEntry) -> None:
    await _skewed_bridge(hass, mqtt_mock, loaded, -SKEW, "-300")


async def _skewed_bridge(hass: HomeAssistant, mqtt_mock: Any, loaded: MockConfigEntry, offset: timedelta,
                         figure: str) -> None:
    registry = ir.async_get(hass)
    changes(hass, offset)
    await hass.async_block_till_done()

    # The action succeeds: its deadline is seconds from when the bridge gets it, by its own clock.
    task = hass.async_create_task(hass.services.async_call("media_player", "media_pause", {"entity_id": TV},
                                                           blocking=True))
    command = json.loads((await until_published(mqtt_mock, "/living_room_tv/command/pause"))[-1])
    # On the bridge's clock: 10 s from now by the bridge's time.
    expires = dt_util.parse_datetime(command["expires"])
    assert expires is not None
    assert abs((expires - (dt_util.utcnow() + offset + timedelta(seconds=10))).total_seconds()) < 3
    answer(hass, mqtt_mock)
    await task

    issue = registry.async_get_issue("cast2mqtt", ISSUE)
    assert issue is not None and issue.translation_key == "clock_skew"
    assert issue.translation_placeholders is not None
    assert issue.translation_placeholders["seconds"] == figure
    assert issue.translation_placeholders["base_topic"] == BASE
    diagnostics = await async_get_config_entry_diagnostics(hass, loaded)
    assert round(diagnostics["bridge"]["clock"]["skew_seconds"]) == int(figure)

    # A media position the bridge stamped is read on Home Assistant's clock.
    position_stamp = dt_util.utcnow() + offset
    async_fire_mqtt_message(hass, f"{BASE}/living_room_tv/media", json.dumps({
        **PLAYING, "position": 12.0, "position_updated_at": rfc3339(position_stamp), "updated_at": stamp(offset)}))
    await hass.async_block_till_done()
    updated_at = hass.states.get(TV).attributes["media_position_updated_at"]  # type: ignore[union-attr]
    assert abs((updated_at - (position_stamp - offset)).total_seconds()) < 5

    # The clocks agree again: once the median has moved, the issue goes.
    changes(hass, timedelta(0), 15)
    await hass.async_block_till_done()
    assert registry.async_get_issue("cast2mqtt", ISSUE) is None
    assert abs(bridge_of(loaded).clock.seconds or 0.0) < 5


async def test_until_the_clock_is_measured_the_deadline_is_relative(
        hass: HomeAssistant, mqtt_mock, loaded: MockConfigEntry) -> None:
    bridge = bridge_of(loaded)
    assert bridge.clock.seconds is None
    task = hass.async_create_task(hass.services.async_call("media_player", "media_pause", {"entity_id": TV},
                                                           blocking=True))
    command = json.loads((await until_published(mqtt_mock, "/living_room_tv/command/pause"))[-1])
    assert command["expires"] == 10.0  # seconds the bridge counts from when it receives it
    answer(hass, mqtt_mock)
    await task
    # Measured within jitter: Home Assistant's time as it is.
    changes(hass, timedelta(milliseconds=300))
    await hass.async_block_till_done()
    task = hass.async_create_task(hass.services.async_call("media_player", "media_play", {"entity_id": TV},
                                                           blocking=True))
    command = json.loads((await until_published(mqtt_mock, "/living_room_tv/command/play"))[-1])
    expires = dt_util.parse_datetime(command["expires"])
    assert expires is not None and command["expires"].endswith("Z")
    assert abs((expires - (dt_util.utcnow() + timedelta(seconds=10))).total_seconds()) < 2
    answer(hass, mqtt_mock)
    await task


async def test_retained_and_unchanged_documents_are_not_samples(
        hass: HomeAssistant, mqtt_mock, loaded: MockConfigEntry) -> None:
    bridge = bridge_of(loaded)
    # Retained replays (Home Assistant subscribed, or reconnected) carry the time of an old change.
    changes(hass, -timedelta(hours=3), 5, retain=True)
    await hass.async_block_till_done()
    assert bridge.clock.samples == 0
    # The bridge republishes unchanged documents (with their old stamps) after it reconnects.
    document = {"app_id": "CC1AD845", "volume": {"level": 0.5}, "updated_at": stamp(-timedelta(hours=3))}
    for _ in range(5):
        async_fire_mqtt_message(hass, f"{BASE}/kitchen/receiver", json.dumps(document))
    await hass.async_block_till_done()
    assert bridge.clock.samples == 1  # the first one changed the document
    assert ir.async_get(hass).async_get_issue("cast2mqtt", ISSUE) is None


async def test_events_are_samples(hass: HomeAssistant, mqtt_mock, loaded: MockConfigEntry) -> None:
    for _ in range(CLOCK_MIN_SAMPLES):
        async_fire_mqtt_message(hass, f"{BASE}/bridge/event", json.dumps({"type": "device_updated", "at": stamp(SKEW)}))
    await hass.async_block_till_done()
    assert round(bridge_of(loaded).clock.seconds or 0.0) == 300
    assert ir.async_get(hass).async_get_issue("cast2mqtt", ISSUE) is not None
    # A bridge that restarts is measured again (its clock may have been set).
    async_fire_mqtt_message(hass, f"{BASE}/bridge/state", "offline")
    async_fire_mqtt_message(hass, f"{BASE}/bridge/state", "online")
    await hass.async_block_till_done()
    assert bridge_of(loaded).clock.seconds is None
    # Unloading the entry takes its issues.
    assert await hass.config_entries.async_unload(loaded.entry_id)
    assert ir.async_get(hass).async_get_issue("cast2mqtt", ISSUE) is None


EXPIRED = {"code": "timeout", "message": "the command expired before it could be sent"}


async def test_a_bridge_clock_that_moves_after_it_was_measured(
        hass: HomeAssistant, mqtt_mock, loaded: MockConfigEntry) -> None:
    """A bridge measured 2 h behind (booted without a real-time clock), then set right by NTP:
    the deadline put on the old skew is long past on its clock. The bridge answers `timeout`
    (expired, never sent) at once; the integration measures again and sends the command once
    more with a relative deadline, and the action succeeds."""
    registry = ir.async_get(hass)
    bridge = bridge_of(loaded)
    changes(hass, -timedelta(hours=2))
    await hass.async_block_till_done()
    assert registry.async_get_issue("cast2mqtt", ISSUE) is not None
    task = hass.async_create_task(hass.services.async_call("media_player", "media_pause", {"entity_id": TV},
                                                           blocking=True))
    first = json.loads((await until_published(mqtt_mock, "/living_room_tv/command/pause"))[-1])
    assert isinstance(first["expires"], str)  # on the 2 h skew
    answer(hass, mqtt_mock, status="error", error=EXPIRED)
    second = json.loads((await until_published(mqtt_mock, "/living_room_tv/command/pause", 2))[-1])
    assert second["expires"] == 10.0 and second["id"] != first["id"]
    answer(hass, mqtt_mock)
    await task
    assert bridge.clock.seconds is None
    assert registry.async_get_issue("cast2mqtt", ISSUE) is None  # measured again from scratch


async def test_an_expired_answer_is_sent_again_only_once_and_a_device_timeout_never(
        hass: HomeAssistant, mqtt_mock, loaded: MockConfigEntry) -> None:
    import pytest
    from homeassistant.exceptions import HomeAssistantError

    changes(hass, -timedelta(hours=2))
    await hass.async_block_till_done()
    task = hass.async_create_task(hass.services.async_call("media_player", "media_pause", {"entity_id": TV},
                                                           blocking=True))
    await until_published(mqtt_mock, "/living_room_tv/command/pause")
    answer(hass, mqtt_mock, status="error", error=EXPIRED)
    await until_published(mqtt_mock, "/living_room_tv/command/pause", 2)
    answer(hass, mqtt_mock, status="error", error=EXPIRED)  # relative, and still: the bridge's word
    with pytest.raises(HomeAssistantError):
        await task
    assert len([c for c in mqtt_mock.async_publish.call_args_list if c.args[0].endswith("/command/pause")]) == 2

    # The device did not answer: the command was sent, so it is never sent again.
    changes(hass, -timedelta(hours=2))
    await hass.async_block_till_done()
    task = hass.async_create_task(hass.services.async_call("media_player", "media_play", {"entity_id": TV},
                                                           blocking=True))
    await until_published(mqtt_mock, "/living_room_tv/command/play")
    answer(hass, mqtt_mock, status="error", error={"code": "timeout", "message": "the device did not answer within 10 s"})
    with pytest.raises(HomeAssistantError):
        await task
    assert len([c for c in mqtt_mock.async_publish.call_args_list if c.args[0].endswith("/command/play")]) == 1


async def test_a_stamp_at_the_edge_of_time_is_left_as_it_is(
        hass: HomeAssistant, mqtt_mock, loaded: MockConfigEntry) -> None:
    changes(hass, SKEW)
    await hass.async_block_till_done()
    assert bridge_of(loaded).clock.seconds is not None
    async_fire_mqtt_message(hass, f"{BASE}/living_room_tv/media", json.dumps({
        **PLAYING, "position": 1.0, "position_updated_at": "0001-01-01T00:00:00Z", "updated_at": stamp(SKEW)}))
    await hass.async_block_till_done()
    assert hass.states.get(TV).attributes["media_position"] == 1.0  # type: ignore[union-attr]
    skew = ClockSkew()
    for _ in range(CLOCK_MIN_SAMPLES):
        skew.add(datetime.max.replace(tzinfo=dt_util.UTC) - timedelta(seconds=60), datetime.max.replace(tzinfo=dt_util.UTC) - timedelta(seconds=120))
    assert skew.to_bridge(datetime.max.replace(tzinfo=dt_util.UTC)) == datetime.max.replace(tzinfo=dt_util.UTC)
    assert skew.to_local(datetime.min.replace(tzinfo=dt_util.UTC)) == datetime.min.replace(tzinfo=dt_util.UTC)
