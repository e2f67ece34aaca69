"""The HACS and hassfest rules the repository can check offline: manifest keys, hacs.json, the
brand icon, complete translations, every translation key the code uses defined."""

from __future__ import annotations

import json
import pathlib
import re
import struct

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
INTEGRATION = ROOT / "custom_components" / "cast2mqtt"


def manifest() -> dict:
    return json.loads((INTEGRATION / "manifest.json").read_text())


def test_manifest_has_the_keys_hacs_and_hassfest_require() -> None:
    data = manifest()
    for key in ("domain", "name", "documentation", "issue_tracker", "codeowners", "version", "config_flow",
                "iot_class", "integration_type", "requirements", "dependencies"):
        assert key in data, key
    assert data["domain"] == "cast2mqtt" == INTEGRATION.name
    assert data["documentation"].startswith("https://") and data["issue_tracker"].startswith("https://")
    assert data["codeowners"] and all(owner.startswith("@") for owner in data["codeowners"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", data["version"])
    assert data["iot_class"] == "local_push" and data["config_flow"] is True
    # hassfest: keys sorted after domain and name.
    keys = list(data)
    assert keys[:2] == ["domain", "name"] and keys[2:] == sorted(keys[2:])


def test_hacs_json_names_the_oldest_supported_home_assistant() -> None:
    hacs = json.loads((ROOT / "hacs.json").read_text())
    assert hacs["name"] == "cast2mqtt"
    assert set(hacs) <= {"name", "homeassistant", "render_readme", "content_in_root", "zip_release",
                         "filename", "hide_default_branch", "country", "persistent_directory", "hacs"}
    # scripts/lib/ha.sh tests the oldest supported version and the newest; hacs.json promises
    # exactly the oldest (the policy in docs/home-assistant.md).
    ha_sh = (ROOT / "scripts/lib/ha.sh").read_text()

    def pinned(name: str) -> tuple[int, ...]:
        return tuple(int(p) for p in re.search(rf'^{name}=([0-9.]+)$', ha_sh, re.M).group(1).split("."))

    oldest, unit, newest = pinned("HA_OLDEST_VERSION"), pinned("HA_UNIT_VERSION"), pinned("HA_E2E_VERSION")
    assert oldest < unit <= newest
    assert tuple(int(p) for p in hacs["homeassistant"].split(".")) == oldest
    policy = (ROOT / "docs/home-assistant.md").read_text()
    for version in (oldest, unit, newest):
        assert ".".join(map(str, version)) in policy, f"docs/home-assistant.md does not name {version}"


def png_size(path: pathlib.Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", path
    return struct.unpack(">II", data[16:24])


def test_brand_icon_is_shipped_with_the_integration() -> None:
    """Home Assistant 2026.3+ and HACS read custom_components/<domain>/brand/icon.png (256x256,
    hDPI 512x512)."""
    assert png_size(INTEGRATION / "brand" / "icon.png") == (256, 256)
    assert png_size(INTEGRATION / "brand" / "icon@2x.png") == (512, 512)


def flatten(data: dict, prefix: str = "") -> dict[str, str]:
    out = {}
    for key, value in data.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def test_translations_are_complete() -> None:
    strings = flatten(json.loads((INTEGRATION / "strings.json").read_text()))
    english = flatten(json.loads((INTEGRATION / "translations" / "en.json").read_text()))
    assert sorted(set(strings) - set(english)) == []
    assert sorted(set(english) - set(strings)) == []
    for key, value in strings.items():
        assert isinstance(value, str) and value.strip(), key


def test_every_translation_key_the_code_uses_exists() -> None:
    strings = json.loads((INTEGRATION / "strings.json").read_text())
    code = "\n".join(p.read_text() for p in INTEGRATION.glob("*.py"))
    used = set(re.findall(r'translation_key="([a-z_]+)"', code))
    used |= set(re.findall(r'\b(?:service_error|error|CommandError|_fail_waiting|kind)\(\s*"([a-z_]+)"', code))
    # The keys the bridge client raises (command_error() always uses command_failed).
    assert {"command_failed", "command_timeout", "mqtt_not_connected", "mqtt_lost", "unloaded", "busy"} <= used
    missing = sorted(used - set(strings["exceptions"]))
    assert missing == [], missing
    # Errors and aborts the config flow uses.
    flow = (INTEGRATION / "config_flow.py").read_text()
    for reason in re.findall(r'async_abort\(reason="([a-z_]+)"\)', flow):
        assert reason in strings["config"]["abort"], reason
    for error in re.findall(r'errors\[[A-Z_]+\] = "([a-z_]+)"', flow):
        assert error in strings["config"]["error"], error
    for step in re.findall(r'step_id="([a-z_]+)"', flow):
        assert step in strings["config"]["step"], step


def test_every_service_is_described() -> None:
    services = yaml.safe_load((INTEGRATION / "services.yaml").read_text())
    strings = json.loads((INTEGRATION / "strings.json").read_text())["services"]
    assert set(services) == set(strings)
    for name, service in services.items():
        assert set(service.get("fields", {})) == set(strings[name]["fields"]), name
    # transfer's target is picked from cast2mqtt media players.
    assert services["transfer"]["fields"]["to"]["selector"] == {
        "entity": {"integration": "cast2mqtt", "domain": "media_player"}}


def test_every_action_has_an_icon_and_every_icon_an_action() -> None:
    actions = set(yaml.safe_load((INTEGRATION / "services.yaml").read_text()))
    icons = json.loads((INTEGRATION / "icons.json").read_text())
    assert set(icons) <= {"services", "entity"}, icons
    assert set(icons["services"]) == actions
    for action, icon in icons["services"].items():
        assert set(icon) <= {"service", "sections"}, action
        assert re.fullmatch(r"mdi:[a-z0-9-]+", icon["service"]), action
