"""The Home Assistant add-on's config.yaml, build.yaml and repository checked against the add-on
rules of Home Assistant's developer documentation ("Add-on configuration"), written down below.
No image needed.
"""

from __future__ import annotations

import pathlib
import re

import yaml


ROOT = pathlib.Path(__file__).resolve().parents[2]
ADDON = ROOT / "deploy/home-assistant-addon"

# The rules as Home Assistant's developer documentation gives them ("Add-on configuration"):
REQUIRED = {"name": str, "version": str, "slug": str, "description": str, "arch": list}
ARCHES = {"amd64", "aarch64"}  # armhf, armv7 and i386 are no longer supported
SLUG = re.compile(r"^[a-z0-9_]+$")  # lower case, digits, underscore: it names folders and URLs
SERVICE = re.compile(r"^(mqtt|mysql):(provide|want|need)$")
STARTUP = {"initialize", "system", "services", "application", "once"}
BOOT = {"auto", "manual"}
STAGE = {"stable", "experimental", "deprecated"}
# A schema element: bool, email, url, port, match(...), list(a|b), str/password/int/float with an
# optional (min,max), device(...), each optional with a trailing "?".
ELEMENT = re.compile(r"^(?:bool|email|url|port|device(?:\(subsystem=[a-z]+\))?|match\(.*\)|list\([^()|]+(?:\|[^()|]+)*\)"
                     r"|(?:str|password)(?:\(\d*,\d*\))?|(?:int|float)(?:\(-?[\d.]*,-?[\d.]*\))?)\??$")
KNOWN_KEYS = set(REQUIRED) | {
    "url", "startup", "boot", "init", "host_network", "services", "ingress", "ingress_port", "ingress_entry",
    "ingress_stream", "panel_icon", "panel_title", "panel_admin", "watchdog", "stage", "options", "schema", "map",
    "image", "ports", "ports_description", "hassio_api", "hassio_role", "homeassistant_api", "host_dbus", "apparmor",
    "privileged", "full_access", "udev", "devices", "webui", "timeout", "discovery", "environment", "journald",
    "backup", "backup_exclude", "tmpfs", "advanced", "homeassistant", "auth_api", "audio", "video", "usb", "uart",
}


def load(path: pathlib.Path):
    with path.open() as f:
        return yaml.safe_load(f)


def check_value(value, element: str, where: str) -> None:
    """An option's default fits its schema element."""
    kind = element.rstrip("?")
    if kind == "bool":
        assert isinstance(value, bool), where
    elif kind == "port":
        assert isinstance(value, int) and 1 <= value <= 65535, where
    elif kind.startswith("int"):
        assert isinstance(value, int) and not isinstance(value, bool), where
    elif kind.startswith("float"):
        assert isinstance(value, (int, float)) and not isinstance(value, bool), where
    elif kind.startswith("list("):
        assert value in kind[5:-1].split("|"), f"{where}: {value!r} is not one of {kind}"
    else:  # str, password, email, url, match, device
        assert isinstance(value, str), where
        if value == "":
            assert element.endswith("?"), f"{where}: an empty default needs an optional ({element}?)"


def check_schema(options, schema, where: str) -> None:
    if isinstance(schema, str):
        assert ELEMENT.match(schema), f"{where}: {schema!r} is not a schema type"
        if options is not None:
            check_value(options, schema, where)
    elif isinstance(schema, list):
        assert len(schema) == 1, f"{where}: a list schema has one element"
        assert isinstance(options, list), f"{where}: the default of a list is a list"
        for n, item in enumerate(options):
            check_schema(item, schema[0], f"{where}[{n}]")
        if isinstance(schema[0], dict):
            for key, element in schema[0].items():
                assert isinstance(element, str) and ELEMENT.match(element), f"{where}[].{key}: {element!r}"
    elif isinstance(schema, dict):
        assert isinstance(options, dict), f"{where}: the default must be a mapping"
        for key, value in options.items():
            assert key in schema, f"{where}.{key}: an option without a schema entry"
            check_schema(value, schema[key], f"{where}.{key}")
        for key, element in schema.items():
            optional = isinstance(element, str) and element.endswith("?")
            assert key in options or optional, f"{where}.{key}: required by the schema but has no default"
    else:
        raise AssertionError(f"{where}: unexpected schema {schema!r}")


def test_config_yaml_follows_the_addon_rules():
    config = load(ADDON / "cast2mqtt/config.yaml")
    for key, kind in REQUIRED.items():
        assert isinstance(config.get(key), kind), f"{key} is required and a {kind.__name__}"
    assert not set(config) - KNOWN_KEYS, f"unknown keys {set(config) - KNOWN_KEYS}"
    assert SLUG.match(config["slug"]), config["slug"]
    assert config["arch"] and set(config["arch"]) <= ARCHES, config["arch"]
    assert re.match(r"^\d+\.\d+\.\d+", config["version"]), "a version the store can compare"
    assert config.get("startup", "application") in STARTUP
    assert config.get("boot", "auto") in BOOT
    assert config.get("stage", "stable") in STAGE
    assert all(isinstance(s, str) and SERVICE.match(s) for s in config.get("services", [])), config.get("services")
    assert "mqtt:need" in config["services"]
    # The image's own PID 1 (tini): no init of Docker's.
    assert config["init"] is False
    assert config["host_network"] is True, "mDNS needs the host's network"
    if config.get("ingress"):
        port = config.get("ingress_port", 8099)
        assert isinstance(port, int) and 1 <= port <= 65535
        # The port the web page listens on in the image.
        dockerfile = (ADDON / "cast2mqtt/Dockerfile").read_text()
        assert f"CAST2MQTT_WEB_LISTEN=0.0.0.0:{port}" in dockerfile
        assert str(config.get("panel_icon", "mdi:x")).startswith("mdi:")
    if "watchdog" in config:
        assert re.match(r"^(?:https?|tcp)://\[HOST\]:\[PORT:\d+\]", config["watchdog"]), config["watchdog"]
    assert isinstance(config.get("options"), dict) and isinstance(config.get("schema"), dict)
    check_schema(config["options"], config["schema"], "options")
    assert set(config["options"]) == {"log_level", "base_topic", "devices", "web_token"}
    assert config["schema"]["web_token"].startswith("password"), "the token is shown masked"


def test_build_yaml_repository_and_the_files_of_an_addon():
    config = load(ADDON / "cast2mqtt/config.yaml")
    build = load(ADDON / "cast2mqtt/build.yaml")
    assert set(build["build_from"]) == set(config["arch"]), "a base for every architecture"
    for arch, image in build["build_from"].items():
        assert f"{arch}-base-debian" in image, f"{arch}: Home Assistant's Debian base (the binary is glibc): {image}"
    dockerfile = (ADDON / "cast2mqtt/Dockerfile").read_text()
    assert re.search(r"^ARG BUILD_FROM$", dockerfile, re.M) and re.search(r"^FROM \$\{?BUILD_FROM\}?$", dockerfile, re.M)
    repository = load(ADDON / "repository.yaml")
    assert {"name", "url", "maintainer"} <= set(repository)
    for name in ("DOCS.md", "CHANGELOG.md", "translations/en.yaml"):
        assert (ADDON / "cast2mqtt" / name).is_file(), name
    translations = load(ADDON / "cast2mqtt/translations/en.yaml")["configuration"]
    assert set(translations) == set(config["options"]), "every option is named and described"
    assert all({"name", "description"} <= set(t) for t in translations.values())
    for name, size in (("icon.png", (128, 128)), ("logo.png", (250, 100))):
        data = (ADDON / "cast2mqtt" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{name} is a PNG"
        assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == size, name
