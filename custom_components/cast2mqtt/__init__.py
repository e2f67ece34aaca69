"""cast2mqtt: a media player per Cast device, through the cast2mqtt bridge's MQTT contract."""

from __future__ import annotations

from homeassistant.components import mqtt
from homeassistant.config_entries import ConfigEntry
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ConfigEntryNotReady
from homeassistant.helpers import device_registry as dr

from .bridge import Bridge
from .const import CONF_BASE_TOPIC, DEFAULT_BASE_TOPIC

PLATFORMS: list[Platform] = [Platform.MEDIA_PLAYER]

type Cast2MqttConfigEntry = ConfigEntry[Bridge]


async def async_setup_entry(hass: HomeAssistant, entry: Cast2MqttConfigEntry) -> bool:
    """Subscribe to the bridge's topics and set up the media players."""
    if not await mqtt.async_wait_for_mqtt_client(hass):
        raise ConfigEntryNotReady("the MQTT integration is not available")
    bridge = Bridge(hass, entry.data.get(CONF_BASE_TOPIC, DEFAULT_BASE_TOPIC))
    entry.runtime_data = bridge
    # The platform listens for devices before the subscriptions deliver the retained list.
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    try:
        await bridge.async_start()
    except Exception:
        bridge.async_stop()
        await hass.config_entries.async_unload_platforms(entry, PLATFORMS)
        raise
    entry.async_on_unload(bridge.async_stop)
    return True


async def async_unload_entry(hass: HomeAssistant, entry: Cast2MqttConfigEntry) -> bool:
    """Unload the media players; the bridge unsubscribes through async_on_unload."""
    return await hass.config_entries.async_unload_platforms(entry, PLATFORMS)


async def async_remove_config_entry_device(
    hass: HomeAssistant, entry: Cast2MqttConfigEntry, device: dr.DeviceEntry
) -> bool:
    """Let the user delete a device that the bridge no longer lists (e.g. one it forgot while
    Home Assistant was not running); a listed device would only come back."""
    bridge = entry.runtime_data
    return not any(
        domain == "mqtt" and identifier == f"cast2mqtt_{device_id}"
        for domain, identifier in device.identifiers
        for device_id in bridge.listed
    )
