"""The config flow's branches: user, MQTT discovery (confirm only), duplicates, reconfigure."""

from __future__ import annotations

import json

from homeassistant import config_entries
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers.service_info.mqtt import MqttServiceInfo
from homeassistant.util import dt as dt_util
from pytest_homeassistant_custom_component.common import async_fire_mqtt_message

from conftest import BASE, DEVICES, ROOT, TV, TV_ID, make_entry, publish_bridge

DOMAIN = "cast2mqtt"


def discovery(base: str, payload: str | bytes | None = None) -> MqttServiceInfo:
    return MqttServiceInfo(topic=f"{base}/bridge/devices", payload=json.dumps(DEVICES) if payload is None else payload,
                           qos=1, retain=True, subscribed_topic=f"{base}/bridge/devices", timestamp=dt_util.utcnow())


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
    # No `_set_confirm_only()`: a no-op Home Assistant 2026 reports as deprecated; the form has no
    # field, so the frontend shows it as a confirmation anyway.
    progress = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert len(progress) == 1 and progress[0]["context"]["source"] == config_entries.SOURCE_MQTT
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


# -- MQTT discovery on any base topic -----------------------------------------------------------

MANIFEST = json.loads((ROOT / "custom_components" / "cast2mqtt" / "manifest.json").read_text())


def test_the_manifest_subscribes_to_bases_of_one_to_three_levels() -> None:
    from paho.mqtt.client import topic_matches_sub

    def matched(topic: str) -> bool:
        return any(topic_matches_sub(pattern, topic) for pattern in MANIFEST["mqtt"])

    for topic in ("cast2mqtt/bridge/devices", "cast2mqtt2/bridge/devices", "home/cast/bridge/devices",
                  "site/home/cast/bridge/devices"):
        assert matched(topic), topic
    for topic in ("bridge/devices", "cast2mqtt/bridge/devices/x", "cast2mqtt/bridge/info"):
        assert not matched(topic), topic
    # No topic is matched by two of them (that would start two flows for one message).
    for topic in ("a/bridge/devices", "a/b/bridge/devices", "a/b/c/bridge/devices"):
        assert sum(topic_matches_sub(pattern, topic) for pattern in MANIFEST["mqtt"]) == 1, topic


async def test_discovery_of_a_two_level_base_topic(hass: HomeAssistant, mqtt_mock) -> None:
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_MQTT}, data=discovery("home/cast"))
    assert result["type"] is FlowResultType.FORM and result["step_id"] == "confirm"
    assert result["description_placeholders"] == {"base_topic": "home/cast"}
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {})
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"] == {"base_topic": "home/cast"} and result["result"].unique_id == "home/cast"


async def test_home_assistants_mqtt_discovery_starts_the_flow(hass: HomeAssistant, mqtt_mock) -> None:
    """A device list on a two-level base topic, through Home Assistant's MQTT integration and the
    manifest's subscriptions (not a flow started by hand)."""
    async_fire_mqtt_message(hass, "home/cast/bridge/devices", json.dumps(DEVICES))
    await hass.async_block_till_done()
    progress = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert [p["context"]["unique_id"] for p in progress] == ["home/cast"]
    assert progress[0]["context"]["source"] == config_entries.SOURCE_MQTT
    # Zigbee2MQTT's device list on its own base topic starts a flow that aborts at once.
    async_fire_mqtt_message(hass, "zigbee2mqtt/bridge/devices", json.dumps(ZIGBEE2MQTT_DEVICES))
    await hass.async_block_till_done()
    assert [p["context"]["unique_id"] for p in hass.config_entries.flow.async_progress_by_handler(DOMAIN)] == ["home/cast"]


ZIGBEE2MQTT_DEVICES = [
    {"ieee_address": "0x00124b0022ac9c2e", "type": "Coordinator", "network_address": 0, "friendly_name": "Coordinator"},
    {"ieee_address": "0x0017880104e45517", "type": "Router", "friendly_name": "lamp", "model_id": "LWB010"},
]

HOSTILE_PAYLOADS: list[str | bytes] = [
    "", "[]", "{}", "null", "not json", "[1, 2]", b"\xff\xfe[]", "[" * 100_000, " " * (1024 * 1024 + 1),
    json.dumps(ZIGBEE2MQTT_DEVICES),
    json.dumps([{**DEVICES[0], "cast_type": None}]),
    json.dumps([{**DEVICES[0], "cast_type": "toaster"}]),
    json.dumps([{**DEVICES[0], "id": "../etc"}]),
    json.dumps([{**DEVICES[0], "topic": "Bad Topic"}]),
    json.dumps([{**DEVICES[0], "topic": "bridge"}]),
    json.dumps([DEVICES[0], DEVICES[0]]),  # the same id twice
    json.dumps([DEVICES[0], "x"]),
    json.dumps([DEVICES[0]] * 5000),
]


async def test_discovery_refuses_payloads_that_are_not_a_device_list(hass: HomeAssistant, mqtt_mock) -> None:
    for payload in HOSTILE_PAYLOADS:
        result = await hass.config_entries.flow.async_init(
            DOMAIN, context={"source": config_entries.SOURCE_MQTT}, data=discovery("home/cast", payload))
        assert result["type"] is FlowResultType.ABORT and result["reason"] == "not_a_bridge", payload[:80]
    assert not hass.config_entries.flow.async_progress_by_handler(DOMAIN)


async def test_discovery_refuses_topics_without_a_valid_base(hass: HomeAssistant, mqtt_mock) -> None:
    for topic in ("bridge/devices", "/bridge/devices", "a//b/bridge/devices", "$SYS/bridge/devices",
                  "a b/bridge/devices", "cast2mqtt/bridge/devices/x"):
        info = discovery("x")
        info.topic = topic
        result = await hass.config_entries.flow.async_init(
            DOMAIN, context={"source": config_entries.SOURCE_MQTT}, data=info)
        assert result["type"] is FlowResultType.ABORT and result["reason"] == "invalid_discovery_info", topic


async def test_discovery_takes_bytes(hass: HomeAssistant, mqtt_mock) -> None:
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": config_entries.SOURCE_MQTT},
        data=discovery("a/b/c", json.dumps(DEVICES).encode()))
    assert result["type"] is FlowResultType.FORM and result["step_id"] == "confirm"


# -- options ----------------------------------------------------------------------------------

async def test_options_flow_turns_hiding_off_and_on(hass: HomeAssistant, mqtt_mock) -> None:
    entry = make_entry()
    entry.add_to_hass(hass)
    result = await hass.config_entries.options.async_init(entry.entry_id)
    assert result["type"] is FlowResultType.FORM and result["step_id"] == "init"
    schema = result["data_schema"].schema
    key = next(k for k in schema if k == "hide_duplicates")
    assert key.default() is True
    result = await hass.config_entries.options.async_configure(result["flow_id"], {"hide_duplicates": False})
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert entry.options == {"hide_duplicates": False}
    result = await hass.config_entries.options.async_init(entry.entry_id)
    key = next(k for k in result["data_schema"].schema if k == "hide_duplicates")
    assert key.default() is False
    result = await hass.config_entries.options.async_configure(result["flow_id"], {"hide_duplicates": True})
    assert entry.options == {"hide_duplicates": True}


async def test_options_flow_of_a_removed_entry_aborts(hass: HomeAssistant) -> None:
    from custom_components.cast2mqtt.options_flow import Cast2MqttOptionsFlow

    flow = Cast2MqttOptionsFlow()
    flow.hass = hass
    flow.handler = "no-such-entry"
    result = await flow.async_step_init()
    assert result["type"] is FlowResultType.ABORT and result["reason"] == "entry_removed"


def test_the_options_flow_is_translated() -> None:
    """Its steps, fields and aborts are in strings.json's `options` (and en.json is the same)."""
    import re

    integration = ROOT / "custom_components" / "cast2mqtt"
    strings = json.loads((integration / "strings.json").read_text())["options"]
    english = json.loads((integration / "translations" / "en.json").read_text())["options"]
    assert strings == english
    code = (integration / "options_flow.py").read_text()
    for step in re.findall(r'step_id="([a-z_]+)"', code):
        assert step in strings["step"], step
    for reason in re.findall(r'async_abort\(reason="([a-z_]+)"\)', code):
        assert reason in strings["abort"], reason
    assert set(strings["step"]["init"]["data"]) == {"hide_duplicates"}
    assert set(strings["step"]["init"]["data_description"]) == {"hide_duplicates"}
