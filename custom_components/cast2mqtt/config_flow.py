"""Config flow: the bridge's base topic."""

from __future__ import annotations

import re
from typing import Any

import voluptuous as vol

from homeassistant.config_entries import ConfigFlow, ConfigFlowResult
from homeassistant.helpers.service_info.mqtt import MqttServiceInfo

from .const import CONF_BASE_TOPIC, DEFAULT_BASE_TOPIC, DOMAIN

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


class Cast2MqttConfigFlow(ConfigFlow, domain=DOMAIN):
    """Ask for the base topic, or confirm a bridge found on MQTT."""

    VERSION = 1

    def __init__(self) -> None:
        self._discovered_base: str | None = None

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
        return self.async_show_form(
            step_id="user",
            data_schema=vol.Schema(
                {vol.Required(CONF_BASE_TOPIC, default=DEFAULT_BASE_TOPIC): str}
            ),
            errors=errors,
        )

    async def async_step_mqtt(self, discovery_info: MqttServiceInfo) -> ConfigFlowResult:
        """Home Assistant saw `<base>/bridge/devices` (see `mqtt` in manifest.json)."""
        topic = discovery_info.topic
        suffix = "/bridge/devices"
        if not topic.endswith(suffix):
            return self.async_abort(reason="invalid_discovery_info")
        base = topic[: -len(suffix)]
        if not valid_base_topic(base):
            return self.async_abort(reason="invalid_discovery_info")
        await self.async_set_unique_id(base)
        self._abort_if_unique_id_configured()
        self._discovered_base = base
        self.context["title_placeholders"] = {"base_topic": base}
        return await self.async_step_confirm()

    async def async_step_confirm(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        """Confirm the discovered bridge."""
        base = self._discovered_base or DEFAULT_BASE_TOPIC
        if user_input is not None:
            return self.async_create_entry(title=base, data={CONF_BASE_TOPIC: base})
        return self.async_show_form(
            step_id="confirm", description_placeholders={"base_topic": base}
        )
