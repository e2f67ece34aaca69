"""Diagnostics: the entry, devices and last responses, without secrets."""

from __future__ import annotations

import json

from homeassistant.core import HomeAssistant

from custom_components.cast2mqtt.diagnostics import async_get_config_entry_diagnostics
from conftest import TV, answer, publish_bridge, until_published

SIGNED = "http://ha.local:8123/media/local/chime.mp3?authSig=eyJhbGciOiJIUzI1NiJ9.secret"


async def test_diagnostics_redact_urls_custom_data_and_sessions(hass: HomeAssistant, mqtt_mock, loaded) -> None:
    publish_bridge(
        hass, state="playing",
        media={"state": "playing", "media_session_id": 4, "content_id": SIGNED, "custom_data": {"token": "t0p"},
               "images": [{"url": SIGNED}], "queue": {"items": [{"item_id": 1, "content_id": SIGNED}]}},
        receiver={"app_id": "CC1AD845", "session_id": "5d0c-secret", "status_text": f"Casting: {SIGNED}",
                  "volume": {"level": 0.5}},
    )
    await hass.async_block_till_done()
    task = hass.async_create_task(hass.services.async_call(
        "media_player", "play_media",
        {"entity_id": TV, "media_content_id": SIGNED, "media_content_type": "music"}, blocking=True))
    await until_published(mqtt_mock, "/command/load")
    answer(hass, mqtt_mock, status="error", error={"code": "load_failed", "message": f"could not load {SIGNED}"})
    try:
        await task
    except Exception:  # noqa: BLE001 - the error is what the diagnostics record
        pass

    data = await async_get_config_entry_diagnostics(hass, loaded)
    text = json.dumps(data)
    assert "authSig" not in text and "secret" not in text and "t0p" not in text, text
    tv = next(d for d in data["devices"] if d["topic"] == "living_room_tv")
    assert tv["media"]["content_id"] == "http://ha.local:8123/media/local/chime.mp3?**REDACTED**"
    assert tv["media"]["custom_data"] == "**REDACTED**" and tv["receiver"]["session_id"] == "**REDACTED**"
    assert tv["state"] == "playing" and tv["availability"] == "online" and tv["cast_type"] == "video"
    assert data["entry"]["data"] == {"base_topic": "cast2mqtt"}
    assert data["bridge"]["online"] is True
    last = data["last_responses"][-1]
    assert last["command"] == "load" and last["status"] == "error" and last["error_code"] == "load_failed"
