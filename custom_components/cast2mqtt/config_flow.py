"""Config flow: the bridge's base topic (entered, or found by MQTT discovery on any base topic),
and the options flow (hide the MQTT-discovered controls the media player repeats)."""

from __future__ import annotations

import re
from typing import Any

from homeassistant.config_entries import ConfigEntry, ConfigFlow, ConfigFlowResult, OptionsFlow
from homeassistant.core import HomeAssistant, callback
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.service_info.mqtt import MqttServiceInfo

from .const import CONF_BASE_TOPIC, DEFAULT_BASE_TOPIC, DOMAIN, ENTRY_MINOR_VERSION, ENTRY_VERSION, unique_id
from .options_flow import Cast2MqttOptionsFlow
from .payloads import json_payload, parse_devices
from .schema import vol

# A base topic: levels of printable characters without wildcards, not starting with `$`.
_BASE_TOPIC_RE = re.compile(r"^[^\s+#/$][^\s+#]*$")


def valid_base_topic(value: str) -> bool:
    """True for a topic that can prefix the bridge's topics."""
    return (
        0 < len(value) <= 200
        and _BASE_TOPIC_RE.match(value) is not None
        and not value.endswith("/")
        and "//" not in value
    )


DEVICES_SUFFIX = "/bridge/devices"
CAST_TYPES = frozenset({"video", "audio", "group"})


def base_of_devices_topic(topic: str) -> str | None:
    """The base topic of a `<base>/bridge/devices` topic, if it is a valid one."""
    if not topic.endswith(DEVICES_SUFFIX):
        return None
    base = topic[: -len(DEVICES_SUFFIX)]
    return base if valid_base_topic(base) else None


def is_devices_list(payload: str | bytes | bytearray) -> bool:
    """Whether a payload is a cast2mqtt bridge's device list: a non-empty JSON array of objects,
    each with a valid id and topic name (ids unique) and a Cast type. Other software publishes
    `<x>/bridge/devices` too (Zigbee2MQTT: an array of Zigbee devices); an empty array says
    nothing about who published it, so a bridge is discovered once it lists a device."""
    try:
        value = json_payload(payload)
    except RecursionError:  # nested deeper than the JSON decoder goes
        return False
    if not isinstance(value, list) or not value:
        return False
    devices = parse_devices(value)
    return (
        devices is not None
        and len(devices) == len(value)
        and all(isinstance(entry, dict) and entry.get("cast_type") in CAST_TYPES for entry in value)
    )


class Cast2MqttConfigFlow(ConfigFlow, domain=DOMAIN):
    """Ask for the base topic, confirm a bridge found on MQTT, or change the base topic."""

    VERSION = ENTRY_VERSION
    MINOR_VERSION = ENTRY_MINOR_VERSION

    def __init__(self) -> None:
        self._discovered_base: str | None = None

    @staticmethod
    @callback
    def async_get_options_flow(config_entry: ConfigEntry) -> OptionsFlow:
        """The entry's options: whether duplicate controls are hidden."""
        return Cast2MqttOptionsFlow()

    async def async_step_user(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """The user adds the integration."""
        if not self.hass.config_entries.async_entries("mqtt"):
            return self.async_abort(reason="mqtt_not_configured")
        errors: dict[str, str] = {}
        if user_input is not None:
            base = str(user_input[CONF_BASE_TOPIC]).strip()
            if valid_base_topic(base):
                # A discovery flow for the same bridge may be waiting; this one wins and ends it.
                await self.async_set_unique_id(base, raise_on_progress=False)
                self._abort_if_unique_id_configured()
                return self.async_create_entry(title=base, data={CONF_BASE_TOPIC: base})
            errors[CONF_BASE_TOPIC] = "invalid_topic"
        return self.async_show_form(step_id="user", data_schema=_schema(DEFAULT_BASE_TOPIC), errors=errors)

    async def async_step_mqtt(self, discovery_info: MqttServiceInfo) -> ConfigFlowResult:
        """Home Assistant saw `<base>/bridge/devices` with a base of one to three levels (see
        `mqtt` in manifest.json); the payload must be a cast2mqtt bridge's device list."""
        base = base_of_devices_topic(discovery_info.topic)
        if base is None:
            return self.async_abort(reason="invalid_discovery_info")
        if not is_devices_list(discovery_info.payload):
            return self.async_abort(reason="not_a_bridge")
        await self.async_set_unique_id(base)
        self._abort_if_unique_id_configured()
        self._discovered_base = base
        self.context["title_placeholders"] = {"base_topic": base}
        return await self.async_step_confirm()

    async def async_step_confirm(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Confirm the discovered bridge (nothing to enter)."""
        base = self._discovered_base or DEFAULT_BASE_TOPIC
        if user_input is not None:
            return self.async_create_entry(title=base, data={CONF_BASE_TOPIC: base})
        return self.async_show_form(step_id="confirm", description_placeholders={"base_topic": base})

    async def async_step_reconfigure(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """The bridge now publishes under another base topic: move the entry and its media
        players there (their registry entries are renamed, so entity ids stay)."""
        entry = self._get_reconfigure_entry()
        current = entry.data.get(CONF_BASE_TOPIC, DEFAULT_BASE_TOPIC)
        errors: dict[str, str] = {}
        if user_input is not None:
            base = str(user_input[CONF_BASE_TOPIC]).strip()
            if not valid_base_topic(base):
                errors[CONF_BASE_TOPIC] = "invalid_topic"
            else:
                await self.async_set_unique_id(base, raise_on_progress=False)
                if base != current:
                    self._abort_if_unique_id_configured()
                    _rename_players(self.hass, entry.entry_id, current, base)
                return self.async_update_reload_and_abort(
                    entry, unique_id=base, title=base, data_updates={CONF_BASE_TOPIC: base}
                )
        return self.async_show_form(
            step_id="reconfigure",
            data_schema=_schema(current),
            errors=errors,
            description_placeholders={"base_topic": current},
        )


def _schema(default: str) -> vol.Schema:
    return vol.Schema({vol.Required(CONF_BASE_TOPIC, default=default): str})


@callback
def _rename_players(hass: HomeAssistant, entry_id: str, old_base: str, new_base: str) -> None:
    """Gives the entry's media players the unique ids of the new base topic."""
    registry = er.async_get(hass)
    prefix = unique_id(old_base, "")[: -len(":media_player")]
    for registry_entry in er.async_entries_for_config_entry(registry, entry_id):
        if registry_entry.unique_id.startswith(prefix) and registry_entry.unique_id.endswith(":media_player"):
            device_id = registry_entry.unique_id[len(prefix):-len(":media_player")]
            try:
                registry.async_update_entity(registry_entry.entity_id, new_unique_id=unique_id(new_base, device_id))
            except ValueError:  # a stale entry of the new base holds that id; the player takes that one
                continue
