"""`cast2mqtt.show_lovelace_view`: what goes to the bridge (the token only inside the one command
that needs it), the system user made once and reused, the Home Assistant URL handed to the
display, and the errors."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from homeassistant.auth.const import GROUP_ID_USER
from homeassistant.core import Context, HomeAssistant
from homeassistant.exceptions import HomeAssistantError, ServiceValidationError, Unauthorized, UnknownUser
from homeassistant.helpers import instance_id

from custom_components.cast2mqtt import lovelace
from custom_components.cast2mqtt.diagnostics import async_get_config_entry_diagnostics
from conftest import BASE, TV, answer, make_entry, published, until_published

EXTERNAL = "https://ha.example.com"
INTERNAL = "https://homeassistant.local:8123"
STORE_KEY = "cast2mqtt.dashboard_user"


@pytest.fixture
async def https(hass: HomeAssistant) -> None:
    """Home Assistant reachable at an external and an internal https address."""
    await hass.config.async_update(external_url=EXTERNAL, internal_url=INTERNAL)


def publishes(mqtt_mock) -> list[tuple[str, str, bool]]:
    """Every publish of the integration: topic, payload as text, retain."""
    out = []
    for call in mqtt_mock.async_publish.call_args_list:
        payload = call.args[1]
        retain = call.args[3] if len(call.args) > 3 else call.kwargs.get("retain", False)
        out.append((call.args[0], payload if isinstance(payload, str) else payload.decode(), bool(retain)))
    return out


def own_records_with(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    """The integration's log records that contain `text`. (Home Assistant's MQTT client logs every
    payload it publishes at debug level, this one included: docs/home-assistant.md says so.)"""
    return [record.getMessage() for record in caplog.records
            if record.name.startswith("custom_components.cast2mqtt") and text in record.getMessage()]


def dashboard_users(hass: HomeAssistant) -> list[Any]:
    return [user for user in hass.auth._store._users.values() if user.name == lovelace.USER_NAME]  # noqa: SLF001


async def keep(hass: HomeAssistant, mqtt_mock, data: dict[str, Any], *, count: int = 1,
               context: Context | None = None) -> dict[str, Any]:
    """Calls the action with keep, answers the bridge, returns the command/keep body sent."""
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "show_lovelace_view", {"entity_id": TV, "keep": True, **data}, blocking=True, context=context))
    body = json.loads((await until_published(mqtt_mock, "/living_room_tv/command/keep", count))[-1])
    answer(hass, mqtt_mock, data={"state": "launching"})
    await task
    return body


async def test_keep_publishes_the_view_with_the_system_users_token(
        hass: HomeAssistant, mqtt_mock, loaded, https, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="custom_components.cast2mqtt")
    body = await keep(hass, mqtt_mock, {
        "view_path": "downstairs", "dashboard_path": "lovelace-cast",
        "when": {"from": "7:00", "to": "22:30:00"}, "yield_seconds": 45, "silent": True,
    })
    token = body.pop("refresh_token")
    assert body.pop("expires") and body.pop("id")
    assert body == {
        "app": "lovelace", "hass_url": EXTERNAL, "hass_uuid": await instance_id.async_get(hass), "client_id": None,
        "view_path": "downstairs", "dashboard_path": "lovelace-cast",
        "when": {"from": "07:00", "to": "22:30"}, "yield_seconds": 45, "silent": True,
    }
    # A system user's token (no client id: Home Assistant refreshes it only for clientId null),
    # of an administrator as the cast integration makes it.
    refresh_token = hass.auth.async_get_refresh_token_by_token(token)
    assert refresh_token is not None and refresh_token.client_id is None
    user = refresh_token.user
    assert user.system_generated and user.is_admin and user.is_active and user.name == lovelace.USER_NAME
    # Only in the one command, which is not retained; never in the log.
    carrying = [(topic, retain) for topic, payload, retain in publishes(mqtt_mock) if token in payload]
    assert carrying == [(f"{BASE}/living_room_tv/command/keep", False)]
    assert not own_records_with(caplog, token) and own_records_with(caplog, "made the system user")


async def test_the_user_and_its_token_are_made_once_and_reused(
        hass: HomeAssistant, hass_storage: dict[str, Any], mqtt_mock, loaded, https) -> None:
    first = await keep(hass, mqtt_mock, {"view_path": "a"})
    second = await keep(hass, mqtt_mock, {"view_path": "b"}, count=2)
    assert first["refresh_token"] == second["refresh_token"]
    users = dashboard_users(hass)
    assert len(users) == 1 and len(users[0].refresh_tokens) == 1
    assert hass_storage[STORE_KEY]["data"] == {"user_id": users[0].id}
    # Optional keys left out are left to the bridge's defaults.
    assert not {"dashboard_path", "when", "yield_seconds", "silent"} & set(second)
    third = await keep(hass, mqtt_mock, {}, count=3)
    assert "view_path" not in third and third["app"] == "lovelace"


async def test_a_stored_user_is_reused_and_a_deleted_one_replaced(
        hass: HomeAssistant, hass_storage: dict[str, Any], mqtt_mock, loaded, https) -> None:
    # As after a restart: the user id comes from the store; the user already has a token.
    user = await hass.auth.async_create_system_user(lovelace.USER_NAME, group_ids=["system-admin"])
    token = await hass.auth.async_create_refresh_token(user)
    hass_storage[STORE_KEY] = {"version": 1, "minor_version": 1, "key": STORE_KEY, "data": {"user_id": user.id}}
    assert (await keep(hass, mqtt_mock, {"view_path": "a"}))["refresh_token"] == token.token
    # Someone removed the user: a new one is made (and its id kept).
    await hass.auth.async_remove_user(user)
    body = await keep(hass, mqtt_mock, {"view_path": "a"}, count=2)
    assert body["refresh_token"] != token.token
    (new,) = dashboard_users(hass)
    assert new.id != user.id and hass_storage[STORE_KEY]["data"] == {"user_id": new.id}


async def test_a_deactivated_user_is_an_error(hass: HomeAssistant, hass_storage: dict[str, Any], mqtt_mock,
                                              loaded, https) -> None:
    user = await hass.auth.async_create_system_user(lovelace.USER_NAME)
    await hass.auth.async_deactivate_user(user)
    hass_storage[STORE_KEY] = {"version": 1, "minor_version": 1, "key": STORE_KEY, "data": {"user_id": user.id}}
    with pytest.raises(ServiceValidationError) as raised:
        await hass.services.async_call("cast2mqtt", "show_lovelace_view",
                                       {"entity_id": TV, "view_path": "a", "keep": True}, blocking=True)
    assert raised.value.translation_key == "dashboard_user_inactive"
    assert not published(mqtt_mock, "/command/keep")


async def test_the_internal_https_url_when_there_is_no_external_one(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    await hass.config.async_update(internal_url=INTERNAL)
    assert (await keep(hass, mqtt_mock, {"view_path": "a"}))["hass_url"] == INTERNAL


async def test_without_an_https_url_the_action_says_so(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    await hass.config.async_update(internal_url="http://127.0.0.1:8123", external_url="http://ha.example.com")
    with pytest.raises(ServiceValidationError) as raised:
        await hass.services.async_call("cast2mqtt", "show_lovelace_view",
                                       {"entity_id": TV, "view_path": "a", "keep": True}, blocking=True)
    assert raised.value.translation_key == "no_hass_url"
    assert not published(mqtt_mock, "/command/keep") and not dashboard_users(hass)


async def test_hass_url_overrides_home_assistants_own(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    # Any http(s) address, also one Home Assistant would not pick (plain http).
    body = await keep(hass, mqtt_mock, {"view_path": "a", "hass_url": "http://127.0.0.1:8123"})
    assert body["hass_url"] == "http://127.0.0.1:8123"


@pytest.mark.parametrize("data", [
    {"hass_url": "ftp://example.com"},
    {"when": {"from": "25:00", "to": "07:00"}},
    {"when": {"from": "07:00"}},
    {"when": "sometimes"},
    {"yield_seconds": -1},
])
async def test_bad_fields_are_refused(hass: HomeAssistant, mqtt_mock, loaded, https, data: dict[str, Any]) -> None:
    import voluptuous as vol

    with pytest.raises(vol.Invalid):
        await hass.services.async_call("cast2mqtt", "show_lovelace_view",
                                       {"entity_id": TV, "view_path": "a", "keep": True, **data}, blocking=True)


async def test_when_always(hass: HomeAssistant, mqtt_mock, loaded, https) -> None:
    assert (await keep(hass, mqtt_mock, {"view_path": "a", "when": "always"}))["when"] == "always"


async def test_keep_fields_need_keep(hass: HomeAssistant, mqtt_mock, loaded, https) -> None:
    with pytest.raises(ServiceValidationError) as raised:
        await hass.services.async_call("cast2mqtt", "show_lovelace_view",
                                       {"entity_id": TV, "view_path": "a", "silent": True, "yield_seconds": 5},
                                       blocking=True)
    assert raised.value.translation_key == "keep_fields_without_keep"
    assert raised.value.translation_placeholders == {"fields": "yield_seconds, silent"}
    assert not published(mqtt_mock, "/command/")


async def test_a_bridge_without_keep(hass: HomeAssistant, mqtt_mock, loaded, https) -> None:
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "show_lovelace_view", {"entity_id": TV, "view_path": "a", "keep": True}, blocking=True))
    await until_published(mqtt_mock, "/command/keep")
    answer(hass, mqtt_mock, status="error", error={"code": "unknown_command", "message": "unknown command keep"})
    with pytest.raises(ServiceValidationError) as raised:
        await task
    assert raised.value.translation_key == "keep_not_supported"
    assert raised.value.translation_placeholders == {"device": "Living Room TV"}


@pytest.mark.parametrize(("code", "validation"), [("internal", False), ("device_offline", True)])
async def test_other_bridge_errors_are_the_usual_ones(hass: HomeAssistant, mqtt_mock, loaded, https,
                                                      code: str, validation: bool) -> None:
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "show_lovelace_view", {"entity_id": TV, "view_path": "a", "keep": True}, blocking=True))
    await until_published(mqtt_mock, "/command/keep")
    answer(hass, mqtt_mock, status="error", error={"code": code, "message": "it did not work"})
    with pytest.raises(HomeAssistantError) as raised:
        await task
    assert raised.value.translation_key == "command_failed"
    assert raised.value.translation_placeholders["code"] == code
    assert isinstance(raised.value, ServiceValidationError) == validation


async def test_only_administrators_may_call_it(hass: HomeAssistant, mqtt_mock, loaded, https,
                                               hass_read_only_user, hass_admin_user) -> None:
    with pytest.raises(Unauthorized):
        await hass.services.async_call(
            "cast2mqtt", "show_lovelace_view", {"entity_id": TV, "view_path": "a", "keep": True}, blocking=True,
            context=Context(user_id=hass_read_only_user.id))
    user = await hass.auth.async_create_user("Someone", group_ids=[GROUP_ID_USER])
    assert not user.is_admin
    with pytest.raises(Unauthorized):
        await hass.services.async_call(
            "cast2mqtt", "show_lovelace_view", {"entity_id": TV, "view_path": "a", "keep": True}, blocking=True,
            context=Context(user_id=user.id))
    assert not published(mqtt_mock, "/command/keep") and not dashboard_users(hass)
    # Other actions stay open to users who may control the player.
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "launch", {"entity_id": TV, "app_id": "CC1AD845"}, blocking=True, context=Context(user_id=user.id)))
    await until_published(mqtt_mock, "/command/launch")
    answer(hass, mqtt_mock)
    await task
    await keep(hass, mqtt_mock, {"view_path": "a"}, context=Context(user_id=hass_admin_user.id))


async def test_the_admin_check_where_the_platform_registration_has_none(
        hass: HomeAssistant, mqtt_mock, monkeypatch: pytest.MonkeyPatch, hass_owner_user) -> None:
    """A release whose platform entity service registration takes no `admin_only`: the action
    checks itself. (The owner exists first: Home Assistant makes the first user its owner.)"""
    from conftest import setup_with_platform_registration

    await setup_with_platform_registration(hass, monkeypatch)
    user = await hass.auth.async_create_user("Someone", group_ids=[GROUP_ID_USER])
    assert not user.is_admin
    with pytest.raises(Unauthorized):
        await hass.services.async_call(
            "cast2mqtt", "show_lovelace_view", {"entity_id": TV, "view_path": "a", "hass_url": EXTERNAL},
            blocking=True, context=Context(user_id=user.id))
    with pytest.raises(UnknownUser):
        await hass.services.async_call(
            "cast2mqtt", "show_lovelace_view", {"entity_id": TV, "view_path": "a", "hass_url": EXTERNAL},
            blocking=True, context=Context(user_id="gone"))
    assert not published(mqtt_mock, "/command/")
    # An automation's call carries no user.
    assert (await keep(hass, mqtt_mock, {"view_path": "a", "hass_url": EXTERNAL}))["view_path"] == "a"


# MARK: - Once (keep: false): the receiver launched, connect, its status, show_lovelace_view

CONNECTED = {"type": "receiver_status", "connected": True, "showDemo": False, "hassUrl": EXTERNAL,
             "lovelacePath": None, "urlPath": None}


async def sends(mqtt_mock, count: int) -> list[dict[str, Any]]:
    return [json.loads(p) for p in await until_published(mqtt_mock, "/living_room_tv/command/send", count)]


async def test_once_connects_then_shows_the_view(
        hass: HomeAssistant, mqtt_mock, loaded, https, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="custom_components.cast2mqtt")
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "show_lovelace_view", {"entity_id": TV, "view_path": "kitchen", "dashboard_path": "wall"},
        blocking=True))
    (connect,) = await sends(mqtt_mock, 1)
    assert connect["namespace"] == "urn:x-cast:com.nabucasa.hast" and connect["app_id"] == "A078F6B0"
    assert connect["reply"] is True
    token = connect["data"].pop("refreshToken")
    assert connect["data"] == {"type": "connect", "clientId": None, "hassUrl": EXTERNAL,
                               "hassUUID": await instance_id.async_get(hass)}
    assert hass.auth.async_get_refresh_token_by_token(token) is not None
    answer(hass, mqtt_mock, data={"namespace": "urn:x-cast:com.nabucasa.hast", "data": CONNECTED})
    show = (await sends(mqtt_mock, 2))[-1]
    assert show["data"] == {"type": "show_lovelace_view", "viewPath": "kitchen", "urlPath": "wall"}
    assert show["reply"] is False and "app_id" not in show
    answer(hass, mqtt_mock, data={"namespace": "urn:x-cast:com.nabucasa.hast"})
    await task
    assert not published(mqtt_mock, "/command/keep")
    carrying = [(topic, retain) for topic, payload, retain in publishes(mqtt_mock) if token in payload]
    assert carrying == [(f"{BASE}/living_room_tv/command/send", False)]
    assert not own_records_with(caplog, token)


async def test_once_waits_until_the_receiver_has_logged_in(
        hass: HomeAssistant, mqtt_mock, loaded, https, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lovelace, "CONNECT_POLL_SECONDS", 0)
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "show_lovelace_view", {"entity_id": TV}, blocking=True))
    await sends(mqtt_mock, 1)
    # Still logging in (as text, the way an app's message may come), then logged in elsewhere,
    # then here.
    answer(hass, mqtt_mock, data={"data": json.dumps({**CONNECTED, "connected": False})})
    assert (await sends(mqtt_mock, 2))[-1]["data"] == {"type": "get_status"}
    answer(hass, mqtt_mock, data={"data": {**CONNECTED, "hassUrl": "https://other.example.com"}})
    await sends(mqtt_mock, 3)
    answer(hass, mqtt_mock, data={"data": "not json"})
    await sends(mqtt_mock, 4)
    answer(hass, mqtt_mock, data={"data": {**CONNECTED, "hassUrl": EXTERNAL + "/"}})
    show = (await sends(mqtt_mock, 5))[-1]
    assert show["data"] == {"type": "show_lovelace_view", "viewPath": None, "urlPath": None}
    answer(hass, mqtt_mock)
    await task


async def test_once_reports_the_receivers_error(hass: HomeAssistant, mqtt_mock, loaded, https) -> None:
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "show_lovelace_view", {"entity_id": TV, "view_path": "kitchen"}, blocking=True))
    await sends(mqtt_mock, 1)
    answer(hass, mqtt_mock, data={"data": {"type": "receiver_error", "error_code": 2,
                                           "error_message": "Authentication failed"}})
    with pytest.raises(HomeAssistantError) as raised:
        await task
    assert raised.value.translation_key == "lovelace_receiver_error"
    assert raised.value.translation_placeholders == {
        "device": "Living Room TV", "code": "2", "message": "Authentication failed"}
    assert len(published(mqtt_mock, "/command/send")) == 1


async def test_once_gives_up_when_the_receiver_never_logs_in(
        hass: HomeAssistant, mqtt_mock, loaded, https, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lovelace, "CONNECT_POLL_SECONDS", 0)
    monkeypatch.setattr(lovelace, "CONNECT_POLLS", 2)
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "show_lovelace_view", {"entity_id": TV, "view_path": "kitchen"}, blocking=True))
    for count in (1, 2, 3):
        await sends(mqtt_mock, count)
        answer(hass, mqtt_mock, data={"data": {**CONNECTED, "connected": False}})
    with pytest.raises(HomeAssistantError) as raised:
        await task
    assert raised.value.translation_key == "lovelace_not_connected"
    assert raised.value.translation_placeholders == {"device": "Living Room TV", "hass_url": EXTERNAL}
    assert len(published(mqtt_mock, "/command/send")) == 3


async def test_once_fails_with_the_bridges_error(hass: HomeAssistant, mqtt_mock, loaded, https) -> None:
    task = hass.async_create_task(hass.services.async_call(
        "cast2mqtt", "show_lovelace_view", {"entity_id": TV, "view_path": "kitchen"}, blocking=True))
    await sends(mqtt_mock, 1)
    answer(hass, mqtt_mock, status="error", error={"code": "launch_error", "message": "the device refused LAUNCH"})
    with pytest.raises(HomeAssistantError) as raised:
        await task
    assert raised.value.translation_key == "command_failed"
    assert raised.value.translation_placeholders["code"] == "launch_error"


# MARK: - Diagnostics and removal


async def test_diagnostics_never_show_the_token(hass: HomeAssistant, mqtt_mock, loaded, https) -> None:
    from pytest_homeassistant_custom_component.common import async_fire_mqtt_message

    token = (await keep(hass, mqtt_mock, {"view_path": "a"}))["refresh_token"]
    # Even a receiver document that carried it (the bridge never publishes one) is redacted.
    async_fire_mqtt_message(hass, f"{BASE}/living_room_tv/receiver", json.dumps({
        "app_id": "A078F6B0", "volume": {"level": 0.5}, "refresh_token": token, "extra": {"refreshToken": token}}))
    await hass.async_block_till_done()
    text = json.dumps(await async_get_config_entry_diagnostics(hass, loaded))
    assert token not in text
    assert '"command": "keep"' in text


async def test_the_user_goes_with_the_last_entry(hass: HomeAssistant, hass_storage: dict[str, Any], mqtt_mock,
                                                 loaded, https) -> None:
    await keep(hass, mqtt_mock, {"view_path": "a"})
    (user,) = dashboard_users(hass)
    other = make_entry("other")
    other.add_to_hass(hass)
    await hass.config_entries.async_remove(other.entry_id)
    assert dashboard_users(hass) == [user]
    await hass.config_entries.async_remove(loaded.entry_id)
    await hass.async_block_till_done()
    assert dashboard_users(hass) == [] and await hass.auth.async_get_user(user.id) is None
    assert STORE_KEY not in hass_storage


async def test_removing_the_last_entry_without_a_user(hass: HomeAssistant, hass_storage: dict[str, Any],
                                                      mqtt_mock, loaded) -> None:
    await hass.config_entries.async_remove(loaded.entry_id)
    await hass.async_block_till_done()
    assert STORE_KEY not in hass_storage
