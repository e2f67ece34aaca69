"""Constants of the cast2mqtt integration."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from homeassistant.core import HomeAssistant
from homeassistant.util.hass_dict import HassKey

if TYPE_CHECKING:
    from .media_player import Cast2MqttMediaPlayer

DOMAIN: Final = "cast2mqtt"

CONF_BASE_TOPIC: Final = "base_topic"
DEFAULT_BASE_TOPIC: Final = "cast2mqtt"

# The Default Media Receiver, launched by `turn_on`.
DEFAULT_MEDIA_RECEIVER: Final = "CC1AD845"

# Every JSON command carries `"expires"`: the time after which the bridge answers `timeout` instead
# of sending it to the device (so a command Home Assistant gave up on never runs later).
COMMAND_DEADLINE: Final = 10.0
# An announcement may wait behind another one that is still playing (the bridge queues them).
ANNOUNCE_DEADLINE: Final = 60.0
# After the deadline Home Assistant still waits this long for the answer: a command the bridge
# started just before its deadline is answered within the bridge's cast.request_timeout (10 s by
# default), twice for a load that launches the Default Media Receiver first. Only once this has
# passed without an answer is the command reported as timed out, and by then it can no longer run.
RESPONSE_GRACE: Final = 20.0
COMMAND_TIMEOUT: Final = COMMAND_DEADLINE + RESPONSE_GRACE
# `announce` with `"wait": true` answers when the clip has finished; the bridge ends a clip after
# at most 10 minutes.
ANNOUNCE_CLIP_LIMIT: Final = 600.0
# Responses kept for diagnostics (command, status, error code; never the data).
RECENT_RESPONSES: Final = 50
# Commands in flight at once, per bridge (a bound, not a tuning knob).
MAX_PENDING_COMMANDS: Final = 256
# Device topics remembered before they are listed in bridge/devices (bounds hostile floods).
MAX_TRACKED_TOPICS: Final = 4096
# Largest payload parsed, in bytes (bridge/devices of a big fleet stays well below this).
MAX_PAYLOAD: Final = 1024 * 1024
# Members read from a group's `members` (the bridge keeps at most 128).
MAX_GROUP_MEMBERS: Final = 256

# A device topic name as the bridge makes it, and a Cast device id / app id.
TOPIC_NAME_RE: Final = re.compile(r"^[a-z0-9_]{1,128}$")
DEVICE_ID_RE: Final = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
# A bridge instance name (`instance:` in its configuration) and an `info.auth_error` word.
INSTANCE_RE: Final = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
AUTH_ERROR_RE: Final = re.compile(r"^[a-z_]{1,32}$")
APP_ID_RE: Final = re.compile(r"^[A-Za-z0-9._-]{1,64}$")

PLAYER_STATES: Final = ("off", "idle", "buffering", "playing", "paused")

# Config entry versions: 1.2 puts the base topic into the media players' unique ids.
ENTRY_VERSION: Final = 1
ENTRY_MINOR_VERSION: Final = 2

SERVICE_TRANSFER: Final = "transfer"
SERVICE_SET_PLAYBACK_RATE: Final = "set_playback_rate"
SERVICE_LAUNCH: Final = "launch"
SERVICE_SEND_MESSAGE: Final = "send_message"
SERVICE_SHOW_LOVELACE_VIEW: Final = "show_lovelace_view"

ATTR_TO: Final = "to"
ATTR_KEEP_SOURCE: Final = "keep_source"
ATTR_RATE: Final = "rate"
ATTR_APP_ID: Final = "app_id"
ATTR_NAMESPACE: Final = "namespace"
ATTR_DATA: Final = "data"
ATTR_REPLY: Final = "reply"
ATTR_TIMEOUT: Final = "timeout"
ATTR_VIEW_PATH: Final = "view_path"
ATTR_DASHBOARD_PATH: Final = "dashboard_path"
ATTR_KEEP: Final = "keep"
ATTR_WHEN: Final = "when"
ATTR_YIELD_SECONDS: Final = "yield_seconds"
ATTR_SILENT: Final = "silent"
ATTR_HASS_URL: Final = "hass_url"

# Where the loaded media players are found by the integration's actions (entity id -> player).
DATA_PLAYERS: HassKey[dict[str, Cast2MqttMediaPlayer]] = HassKey(f"{DOMAIN}_players")


def unique_id(base_topic: str, device_id: str) -> str:
    """A media player's unique id: the bridge's base topic and the Cast device id, so two bridges
    that see the same device give two players instead of one colliding id."""
    return f"{base_topic}:{device_id}:media_player"


def legacy_unique_id(device_id: str) -> str:
    """The unique id before 1.2 (config entry minor version 1), without the base topic."""
    return f"cast2mqtt_{device_id}_media_player"


def device_identifier(device_id: str) -> tuple[str, str]:
    """The bridge's MQTT discovery registers the device under the MQTT integration's domain;
    the same identifier makes the media player part of that same device."""
    return ("mqtt", f"cast2mqtt_{device_id}")


def device_id_of(identifier: tuple[str, str]) -> str | None:
    """The Cast device id of a `device_identifier`, None for any other identifier (the bridge's
    own device, `cast2mqtt_bridge[_...]`, included)."""
    domain, value = identifier
    if domain != "mqtt" or not value.startswith("cast2mqtt_"):
        return None
    device_id = value.removeprefix("cast2mqtt_")
    if not device_id or device_id == "bridge" or device_id.startswith("bridge_"):
        return None
    return device_id


def players(hass: HomeAssistant) -> dict[str, Cast2MqttMediaPlayer]:
    """The media players of every loaded entry, by entity id."""
    return hass.data.setdefault(DATA_PLAYERS, {})
