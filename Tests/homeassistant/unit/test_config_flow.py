"""The config flow's branches: user, MQTT discovery (confirm only), duplicates, reconfigure."""

from __future__ import annotations

from homeassistant import config_entries
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.service_info.mqtt import MqttServiceInfo
from homeassistant.util import dt as dt_util

from conftest import BASE, TV, TV_ID, make_entry, publish_bridge

DOMAIN = "cast2mqtt"


def discovery(base: str) -> MqttServiceInfo:
    return MqttServiceInfo(topic=f"{base}/bridge/devices", payload="[]", qos=1, retain=True,
                           subscribed_topic=f"{base}/bridge/devices", timestamp=dt_util.utcnow())


async def test_user_creates_an_entry_for_the_base_topic(hass: HomeAssistant, mqtt_mock) -> None:
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": config_entries.SOURCE_USER})
    assert result["type"] is FlowResultType.FORM and result["step_id"] == "user"
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {"base_topic": " home/cast "})
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == "home/cast" and result["data"] == {"base_topic": "home/cast"}
    assert result["result"].unique_id == "home/cast"
    assert result["result"].minor_version == 2


async def test_user_refuses_a_base_topic_with_wildcards(hass: HomeAssistant, mqtt_mock) -> None:
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": config_entries.SOURCE_USER})
    for bad in ("cast2mqtt/#", "a/+/b", "/lead", "trail/", "$SYS", "two//slashes", ""):
        result = await hass.config_entries.flow.async_configure(result["flow_id"], {"base_topic": bad})
        assert result["type"] is FlowResultType.FORM and result["errors"] == {"base_topic": "invalid_topic"}, bad


async def test_user_needs_the_mqtt_integration(hass: HomeAssistant) -> None:
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": config_entries.SOURCE_USER})
    assert result["type"] is FlowResultType.ABORT and result["reason"] == "mqtt_not_configured"


async def test_user_refuses_a_second_entry_for_the_same_bridge(hass: HomeAssistant, mqtt_mock) -> None:
    make_entry().add_to_hass(hass)
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": config_entries.SOURCE_USER})
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {"base_topic": BASE})
    assert result["type"] is FlowResultType.ABORT and result["reason"] == "already_configured"


async def test_discovery_asks_only_for_confirmation(hass: HomeAssistant, mqtt_mock) -> None:
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_MQTT}, data=discovery("cast2mqtt")
    )
    assert result["type"] is FlowResultType.FORM and result["step_id"] == "confirm"
    assert result["data_schema"] is None or not result["data_schema"].schema
    progress = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert progress[0]["context"].get("confirm_only") is True
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {})
    assert result["type"] is FlowResultType.CREATE_ENTRY and result["data"] == {"base_topic": "cast2mqtt"}


async def test_discovery_of_a_configured_bridge_aborts(hass: HomeAssistant, mqtt_mock) -> None:
    make_entry().add_to_hass(hass)
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_MQTT}, data=discovery(BASE)
    )
    assert result["type"] is FlowResultType.ABORT and result["reason"] == "already_configured"


async def test_discovery_of_a_foreign_topic_aborts(hass: HomeAssistant, mqtt_mock) -> None:
    info = discovery("x")
    info.topic = "x/+/bridge/devicesX"
    result = await hass.config_entries.flow.async_init(DOMAIN, context={"source": config_entries.SOURCE_MQTT}, data=info)
    assert result["type"] is FlowResultType.ABORT and result["reason"] == "invalid_discovery_info"


async def test_reconfigure_moves_the_entry_and_keeps_the_entity_ids(hass: HomeAssistant, mqtt_mock) -> None:
    entry = make_entry()
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    publish_bridge(hass)
    await hass.async_block_till_done()
    registry = er.async_get(hass)
    assert registry.async_get(TV).unique_id == f"{BASE}:{TV_ID}:media_player"

    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_RECONFIGURE, "entry_id": entry.entry_id})
    assert result["type"] is FlowResultType.FORM and result["step_id"] == "reconfigure"
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {"base_topic": "bad/#"})
    assert result["errors"] == {"base_topic": "invalid_topic"}
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {"base_topic": "home/cast"})
    assert result["type"] is FlowResultType.ABORT and result["reason"] == "reconfigure_successful"
    await hass.async_block_till_done()
    assert entry.data == {"base_topic": "home/cast"} and entry.unique_id == "home/cast" and entry.title == "home/cast"
    assert entry.state is config_entries.ConfigEntryState.LOADED
    # Same entity id, the unique id of the new base topic; the new base's messages drive it.
    assert registry.async_get(TV).unique_id == f"home/cast:{TV_ID}:media_player"
    publish_bridge(hass, "home/cast", state="paused", media={"state": "paused", "media_session_id": 1})
    await hass.async_block_till_done()
    assert hass.states.get(TV).state == "paused"


async def test_reconfigure_to_another_entrys_base_topic_aborts(hass: HomeAssistant, mqtt_mock) -> None:
    entry = make_entry()
    entry.add_to_hass(hass)
    make_entry("other").add_to_hass(hass)
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_RECONFIGURE, "entry_id": entry.entry_id})
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {"base_topic": "other"})
    assert result["type"] is FlowResultType.ABORT and result["reason"] == "already_configured"
    assert entry.data == {"base_topic": BASE}
