"""Diagnostics: the entry, the devices the bridge lists with their last state, and the last
responses. Nothing secret: no response data, URLs without their query (Home Assistant's own media
URLs carry a signature there), no custom data or session ids."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from homeassistant.components.diagnostics import async_redact_data
from homeassistant.core import HomeAssistant

from .bridge import rfc3339
from .repairs import CLOCK_SKEW_LIMIT, missing_features

if TYPE_CHECKING:
    from . import Cast2MqttConfigEntry

# `refresh_token` / `refreshToken`: the login show_lovelace_view hands to a display (never in a
# document the bridge publishes; redacted should one ever carry it).
REDACTED_KEYS = {"custom_data", "session_id", "credentials", "token", "password", "address",
                 "refresh_token", "refreshToken"}
# A URL's query, wherever a URL appears (content ids, images, a receiver's status text).
_URL_QUERY = re.compile(r"((?:https?|rtsp)://[^\s?#\"']+)\?[^\s#\"']*", re.IGNORECASE)


def _scrub(value: Any) -> Any:
    """Every URL in a document without its query."""
    if isinstance(value, dict):
        return {key: _scrub(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    if isinstance(value, str):
        return _URL_QUERY.sub(r"\1?**REDACTED**", value)
    return value


async def async_get_config_entry_diagnostics(hass: HomeAssistant, entry: Cast2MqttConfigEntry) -> dict[str, Any]:
    """What the bridge looks like from Home Assistant, without secrets."""
    bridge = entry.runtime_data
    devices = []
    for device_id, record in sorted(bridge.devices.items()):
        topics = bridge.topics(record.topic)
        devices.append({
            "id": device_id,
            "name": record.name,
            "topic": record.topic,
            "model": record.model,
            "cast_type": record.cast_type,
            "listed": device_id in bridge.listed,
            "availability": topics.availability,
            "state": topics.state,
            "receiver": async_redact_data(_scrub(topics.receiver), REDACTED_KEYS),
            "media": async_redact_data(_scrub(topics.media), REDACTED_KEYS),
        })
    return {
        "entry": {
            "title": entry.title,
            "data": dict(entry.data),
            "version": entry.version,
            "minor_version": entry.minor_version,
        },
        "bridge": {
            "base_topic": bridge.base,
            "online": bridge.online,
            "version": bridge.version,
            "mqtt_connected": bridge.mqtt_connected,
            "keys_the_bridge_refused": sorted(bridge.unsupported_keys),
            "offline_since": rfc3339(bridge.offline_since) if bridge.offline_since else None,
            "clock": {
                # The bridge's clock minus Home Assistant's (median of recent fresh messages).
                "skew_seconds": None if (skew := bridge.clock.seconds) is None else round(skew, 3),
                "samples": bridge.clock.samples,
                "repair_above_seconds": CLOCK_SKEW_LIMIT,
            },
            "features_missing": missing_features(bridge.version, bridge.unsupported_keys),
        },
        "devices": devices,
        "last_responses": _scrub(list(bridge.recent)),
    }
