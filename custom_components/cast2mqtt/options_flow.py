"""The options flow of an entry: whether the MQTT-discovered controls that the media player
repeats are hidden (duplicates.py). A change applies at once, without reloading the entry."""

from __future__ import annotations

from typing import Any

from homeassistant.config_entries import ConfigFlowResult, OptionsFlow

from .duplicates import OPTION_HIDE_DUPLICATES, async_apply_option, hide_duplicates
from .schema import vol


class Cast2MqttOptionsFlow(OptionsFlow):
    """Options of an entry. The entry is looked up by the flow's handler (its entry id), which
    works on every supported Home Assistant (2024.11 has no `config_entry` on OptionsFlow)."""

    async def async_step_init(self, user_input: dict[str, Any] | None = None) -> ConfigFlowResult:
        entry = self.hass.config_entries.async_get_entry(self.handler)
        if entry is None:  # removed while the form was open
            return self.async_abort(reason="entry_removed")
        if user_input is not None:
            hide = bool(user_input.get(OPTION_HIDE_DUPLICATES, True))
            options = {**entry.options, OPTION_HIDE_DUPLICATES: hide}
            # Applied here and now, without a reload and without an update listener (which Home
            # Assistant 2026.12 no longer allows beside the reconfigure flow's reload); the flow's
            # result then stores the same options again, which changes nothing.
            self.hass.config_entries.async_update_entry(entry, options=options)
            async_apply_option(self.hass, entry.entry_id)
            return self.async_create_entry(data=options)
        schema = vol.Schema({vol.Required(OPTION_HIDE_DUPLICATES, default=hide_duplicates(entry)): bool})
        return self.async_show_form(step_id="init", data_schema=schema)
