"""The engine: every message becomes the same four silent MPEG-1 Layer III frames (cast-sim never
fetches them; they only need to be an MP3 that Home Assistant can tag)."""

from __future__ import annotations

from typing import Any

from homeassistant.components.tts import Provider, TtsAudioType
from homeassistant.core import HomeAssistant
from homeassistant.helpers.typing import ConfigType, DiscoveryInfoType

# MPEG-1 Layer III, 128 kbit/s, 44.1 kHz: a 4-byte header and 413 bytes of zeros per frame.
_SILENCE = (b"\xff\xfb\x90\x64" + bytes(413)) * 4


async def async_get_engine(
    hass: HomeAssistant, config: ConfigType, discovery_info: DiscoveryInfoType | None = None
) -> Provider:
    return SimProvider()


class SimProvider(Provider):
    def __init__(self) -> None:
        self.name = "Sim"

    @property
    def default_language(self) -> str:
        return "en"

    @property
    def supported_languages(self) -> list[str]:
        return ["en"]

    def get_tts_audio(self, message: str, language: str, options: dict[str, Any]) -> TtsAudioType:
        return ("mp3", _SILENCE)
