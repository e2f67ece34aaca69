"""Constants of the cast2mqtt integration."""

from __future__ import annotations

import re
from typing import Final

DOMAIN: Final = "cast2mqtt"

CONF_BASE_TOPIC: Final = "base_topic"
DEFAULT_BASE_TOPIC: Final = "cast2mqtt"

# The Default Media Receiver, launched by `turn_on`.
DEFAULT_MEDIA_RECEIVER: Final = "CC1AD845"

# How long a command waits for the bridge's response. The bridge answers every command within
# its own cast.request_timeout (10 s by default); the margin covers a launch before a load.
COMMAND_TIMEOUT: Final = 20.0
# Commands in flight at once, per bridge (a bound, not a tuning knob).
MAX_PENDING_COMMANDS: Final = 256
# Device topics remembered before they are listed in bridge/devices (bounds hostile floods).
MAX_TRACKED_TOPICS: Final = 4096
# Largest payload parsed, in bytes (bridge/devices of a big fleet stays well below this).
MAX_PAYLOAD: Final = 1024 * 1024

# A device topic name as the bridge makes it, and a Cast device id / app id.
TOPIC_NAME_RE: Final = re.compile(r"^[a-z0-9_]{1,128}$")
DEVICE_ID_RE: Final = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
APP_ID_RE: Final = re.compile(r"^[A-Za-z0-9._-]{1,64}$")

PLAYER_STATES: Final = ("off", "idle", "buffering", "playing", "paused")

SERVICE_TRANSFER: Final = "transfer"
SERVICE_SET_PLAYBACK_RATE: Final = "set_playback_rate"
SERVICE_LAUNCH: Final = "launch"
SERVICE_SEND_MESSAGE: Final = "send_message"

ATTR_TO: Final = "to"
ATTR_KEEP_SOURCE: Final = "keep_source"
ATTR_RATE: Final = "rate"
ATTR_APP_ID: Final = "app_id"
ATTR_NAMESPACE: Final = "namespace"
ATTR_DATA: Final = "data"
ATTR_REPLY: Final = "reply"
ATTR_TIMEOUT: Final = "timeout"
