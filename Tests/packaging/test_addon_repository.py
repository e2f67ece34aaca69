"""The repository as Home Assistant's Supervisor reads it when a person adds its URL (Settings →
Apps → App store → ⋮ → Repositories), and the add-on ("app" in the UI) it finds, checked against
the Supervisor's own rules. No image needed.

What the Supervisor does, read from its source (home-assistant/supervisor, main of August 2026,
commit 090ef31; `supervisor/store/`, `supervisor/apps/validate.py`, `supervisor/apps/build.py`),
written down here in our words:

  - It clones the repository (depth 1) and accepts it only when the clone's ROOT holds
    repository.yaml, .yml or .json (store/repository.py, RepositoryGit.validate: tried in that
    order, the first that exists). When it reads the repository's name and maintainer it looks
    for `**/repository.*` anywhere in the clone and takes the first hit (store/data.py,
    utils/common.py find_one_filetype), so there must be exactly one such file.
  - The repository file: `name` (a string) required, `url` (a URL) and `maintainer` (a string)
    optional, anything else dropped (store/validate.py).
  - Add-ons: every `config.yaml`, `.yml` or `.json` at ANY depth (`glob("**/config.*")` with the
    suffix checked), except under a path part that starts with a dot or is named `rootfs`
    (store/data.py). Each one is read and validated; one that fails is skipped with a warning in
    the Supervisor's log, so a stray config.* is a warning on every store reload.
  - An add-on's config (apps/validate.py): name, version, slug, description and arch required;
    slug `[-_.A-Za-z0-9]+`; arch from aarch64 and amd64 (armhf, armv7, i386 still accepted but
    deprecated); `image` a registry image name WITHOUT a tag, lower case, `{arch}` allowed, and
    pulled as image.format(arch=...) at the tag `version`; watchdog
    `tcp|http|https|[PROTO:x]://[HOST]:[PORT:n]...`; ingress_port 1-65535 or 0; services
    `mqtt|mysql:provide|want|need`; schema values from the option types (bool, email, url, port,
    device, str/password/int/float with a range, match(...), list(...), each with an optional
    `?`), a list of one type or a mapping of them; timeout 10-300; unknown keys silently dropped.
    Deprecated, logged: `advanced`, `codenotary`, startup before/after, auto_uart, snapshot*,
    devices with ':', a non-bool tmpfs, the map types addons, all_addon_configs, addon_config
    and config.
  - Translations: translations/<language>.yaml/.yml/.json with `configuration: {option: {name,
    description, fields}}` and `network`.
  - Building: only when `image` is missing (apps/model.py need_build). Then a build.yaml/.yml/.json
    anywhere in the add-on's folder is read, deprecated since Supervisor 2026.04 with a warning,
    and without one BUILD_FROM is not passed: the Dockerfile's `ARG BUILD_FROM=<default>` decides
    (apps/build.py).
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import tempfile
from urllib.parse import urlparse

import pytest
import yaml


ROOT = pathlib.Path(__file__).resolve().parents[2]
ADDON = pathlib.PurePosixPath("deploy/home-assistant-addon/cast2mqtt")

SUFFIXES = (".yaml", ".yml", ".json")  # the Supervisor's FILE_SUFFIX_CONFIGURATION, in its order
ARCHES = {"aarch64", "amd64"}
DEPRECATED_ARCHES = {"armhf", "armv7", "i386"}
SLUG = re.compile(r"^[-_.A-Za-z0-9]+$")
SERVICE = re.compile(r"^(mqtt|mysql):(provide|want|need)$")
WATCHDOG = re.compile(r"^(?:https?|\[PROTO:\w+\]|tcp)://\[HOST\]:(\[PORT:\d+\]|\d+).*$")
WEBUI = re.compile(r"^(?:https?|\[PROTO:\w+\])://\[HOST\]:\[PORT:\d+\].*$")
IMAGE_COMPONENT = re.compile(r"^[a-z0-9{][a-z0-9.\-_{}]*$")
REGISTRY = re.compile(r"^(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
                      r"(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?$")
OPTION_TYPE = re.compile(r"^(?:|bool|email|url|port|device(?:\(subsystem=[a-z]+\))?|str(?:\(\d*,\d*\))?"
                         r"|password(?:\(\d*,\d*\))?|int(?:\(-?\d*,-?\d*\))?|float(?:\(-?[\d.]*,-?[\d.]*\))?"
                         r"|match\(.*\)|list\(.+\))\??$")
STARTUP = {"initialize", "system", "services", "application", "once"}
BOOT = {"auto", "manual", "manual_only"}
STAGE = {"stable", "experimental", "deprecated"}
KNOWN_KEYS = {
    "advanced", "apparmor", "arch", "audio", "auth_api", "backup", "backup_exclude", "backup_post", "backup_pre",
    "boot", "breaking_versions", "description", "devices", "devicetree", "discovery", "docker_api", "environment",
    "full_access", "gpio", "hassio_api", "hassio_role", "homeassistant", "homeassistant_api", "host_dbus",
    "host_ipc", "host_network", "host_pid", "host_uts", "image", "ingress", "ingress_entry", "ingress_port",
    "ingress_stream", "init", "journald", "kernel_modules", "legacy", "machine", "map", "name", "options",
    "panel_admin", "panel_icon", "panel_title", "ports", "ports_description", "privileged", "realtime", "schema",
    "services", "slug", "stage", "startup", "stdin", "timeout", "tmpfs", "uart", "udev", "ulimits", "url", "usb",
    "version", "video", "watchdog", "webui",
}
DEPRECATED_KEYS = {"advanced", "codenotary", "auto_uart", "snapshot", "snapshot_exclude", "snapshot_pre",
                   "snapshot_post"}
DEPRECATED_MAPS = {"addons", "all_addon_configs", "addon_config", "config"}


def read(path: pathlib.Path):
    text = path.read_text()
    return yaml.safe_load(text)  # JSON is YAML


def is_url(value) -> bool:
    if not isinstance(value, str):
        return False
    parsed = urlparse(value)
    return bool(parsed.scheme and parsed.netloc)


def image_problems(image) -> list[str]:
    """The Supervisor's rules for `image` (validate.py docker_image, docker/utils.py)."""
    if not isinstance(image, str) or not image:
        return [f"image {image!r} is not a name"]
    first, slash, rest = image.partition("/")
    registry, path = (first, rest) if slash and (first == "localhost" or "." in first or ":" in first
                                                   or first.lower() != first) else (None, image)
    problems = []
    if registry is not None and (registry != registry.lower() or not REGISTRY.match(registry)):
        problems.append(f"image {image}: registry {registry!r}")
    if ":" in path:
        problems.append(f"image {image}: a tag (the Supervisor adds `version` as the tag)")
    problems += [f"image {image}: part {part!r}" for part in path.split("/") if not IMAGE_COMPONENT.match(part)]
    return problems


def schema_problems(schema, where: str) -> list[str]:
    if isinstance(schema, str):
        return [] if OPTION_TYPE.match(schema) else [f"{where}: {schema!r} is not an option type"]
    if isinstance(schema, list):
        problems = []
        for item in schema:
            if isinstance(item, list):
                problems.append(f"{where}: a list directly in a list")
            else:
                problems += schema_problems(item, f"{where}[]")
        return problems
    if isinstance(schema, dict):
        return [p for key, value in schema.items() for p in schema_problems(value, f"{where}.{key}")]
    return [f"{where}: {schema!r}"]


def config_problems(config) -> list[str]:
    """What stops the Supervisor from taking this config, or makes it log a deprecation."""
    if not isinstance(config, dict) or not config.get("name"):
        return ["not an add-on config (no name)"]
    problems = []
    for key, kind in (("name", str), ("version", (str, int, float)), ("slug", str), ("description", str),
                      ("arch", list)):
        if not isinstance(config.get(key), kind):
            problems.append(f"{key}: required")
    if problems:
        return problems
    if not SLUG.match(config["slug"]):
        problems.append(f"slug {config['slug']!r}")
    problems += [f"arch {a!r}" for a in config["arch"] if a not in ARCHES | DEPRECATED_ARCHES]
    problems += [f"arch {a!r} is deprecated" for a in config["arch"] if a in DEPRECATED_ARCHES]
    problems += [f"unknown key {k!r} (dropped)" for k in set(config) - KNOWN_KEYS - DEPRECATED_KEYS]
    problems += [f"deprecated key {k!r}" for k in set(config) & DEPRECATED_KEYS]
    if "url" in config and not is_url(config["url"]):
        problems.append(f"url {config['url']!r}")
    if config.get("startup", "application") not in STARTUP:
        problems.append(f"startup {config['startup']!r}")
    if config.get("boot", "auto") not in BOOT:
        problems.append(f"boot {config['boot']!r}")
    if config.get("stage", "stable") not in STAGE:
        problems.append(f"stage {config['stage']!r}")
    if "watchdog" in config and not WATCHDOG.match(str(config["watchdog"])):
        problems.append(f"watchdog {config['watchdog']!r}")
    if "webui" in config and not WEBUI.match(str(config["webui"])):
        problems.append(f"webui {config['webui']!r}")
    for key in ("init", "ingress", "ingress_stream", "host_network", "panel_admin", "host_dbus", "full_access"):
        if key in config and not isinstance(config[key], bool):
            problems.append(f"{key} is not a boolean")
    port = config.get("ingress_port", 8099)
    if not (isinstance(port, int) and (port == 0 or 1 <= port <= 65535)):
        problems.append(f"ingress_port {port!r}")
    if not (isinstance(config.get("timeout", 10), int) and 10 <= config.get("timeout", 10) <= 300):
        problems.append(f"timeout {config['timeout']!r}")
    problems += [f"service {s!r}" for s in config.get("services", []) if not (isinstance(s, str) and SERVICE.match(s))]
    if "image" in config:
        problems += image_problems(config["image"])
    if not isinstance(config.get("options", {}), dict):
        problems.append("options is not a mapping")
    schema = config.get("schema", {})
    if schema is not False:
        if not isinstance(schema, dict):
            problems.append("schema is not a mapping")
        else:
            problems += schema_problems(schema, "schema")
    for entry in config.get("map", []):
        kind = entry.get("type") if isinstance(entry, dict) else str(entry).split(":")[0]
        if kind in DEPRECATED_MAPS:
            problems.append(f"deprecated map {kind!r}")
    if config.get("startup") in ("before", "after"):
        problems.append("deprecated startup")
    if any(":" in d for d in config.get("devices", [])) or ("tmpfs" in config and not isinstance(config["tmpfs"], bool)):
        problems.append("deprecated devices/tmpfs format")
    return problems


def clone_of(root: pathlib.Path, into: pathlib.Path) -> pathlib.Path:
    """The files a clone of the repository holds: what git tracks, and new files it does not ignore
    (what the next commit can hold), copied from `root`."""
    files = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           check=True, stdout=subprocess.PIPE).stdout.split(b"\0")
    for name in filter(None, files):
        source = root / os.fsdecode(name)
        if source.is_file():  # a file deleted in the work tree but not yet in the index
            target = into / os.fsdecode(name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return into


def walk(clone: pathlib.Path) -> tuple[dict, dict[str, dict], list[str]]:
    """The repository's file, the add-ons found ({folder relative to the clone: config}) and every
    problem, found the way the Supervisor's store finds them."""
    problems: list[str] = []
    at_root = [clone / f"repository{suffix}" for suffix in SUFFIXES if (clone / f"repository{suffix}").exists()]
    anywhere = [p for p in clone.glob("**/repository.*") if p.suffix in SUFFIXES]
    repository: dict = {}
    if not at_root:
        problems.append("no repository.yaml/.yml/.json at the root: the Supervisor refuses the repository")
    else:
        if len(anywhere) != 1:
            problems.append(f"repository files {sorted(str(p.relative_to(clone)) for p in anywhere)}: "
                            "the Supervisor reads whichever it finds first")
        repository = read(at_root[0]) or {}
        if not isinstance(repository.get("name"), str):
            problems.append("repository file: `name` is required")
        if "url" in repository and not is_url(repository["url"]):
            problems.append(f"repository file: url {repository['url']!r}")
        if "maintainer" in repository and not isinstance(repository["maintainer"], str):
            problems.append("repository file: maintainer is not a string")
    addons: dict[str, dict] = {}
    for path in clone.glob("**/config.*"):
        relative = path.relative_to(clone)
        if path.suffix not in SUFFIXES or any(p.startswith(".") or p == "rootfs" for p in relative.parts):
            continue
        try:
            config = read(path)
        except yaml.YAMLError as error:
            problems.append(f"{relative}: unreadable ({error})")
            continue
        found = config_problems(config)
        problems += [f"{relative}: {p}" for p in found]
        if not found:
            addons[str(relative.parent)] = config
    return repository, addons, problems


@pytest.fixture(scope="module")
def clone():
    with tempfile.TemporaryDirectory(prefix="cast2mqtt-clone-") as d:
        yield clone_of(ROOT, pathlib.Path(d))


def test_the_supervisor_finds_exactly_our_addon(clone):
    repository, addons, problems = walk(clone)
    assert problems == []
    assert repository["name"] and repository["url"] == "https://github.com/cast2mqtt/cast2mqtt"
    assert list(addons) == [str(ADDON)]
    config = addons[str(ADDON)]
    assert config["slug"] == "cast2mqtt" and set(config["arch"]) == ARCHES


@pytest.mark.parametrize("change, expected", [
    # A stray config.yaml anywhere (here under deploy/) is read as an add-on and refused.
    (lambda c: (c / "deploy/debian/config.yaml").write_text("mqtt:\n  url: mqtt://127.0.0.1\n"),
     "deploy/debian/config.yaml: not an add-on config"),
    # The repository file moved back into deploy/: the repository is refused.
    (lambda c: (c / "repository.yaml").rename(c / "deploy/home-assistant-addon/repository.yaml"),
     "no repository.yaml/.yml/.json at the root"),
    # A second repository file, anywhere.
    (lambda c: shutil.copy(c / "repository.yaml", c / "deploy/repository.json"), "repository files"),
    # The image with a tag, a deprecated architecture, an unknown key: each is refused or logged.
    (lambda c: edit(c, "image: ghcr.io/cast2mqtt/{arch}-cast2mqtt-addon", "image: ghcr.io/cast2mqtt/x:1.0"),
     "a tag"),
    (lambda c: edit(c, "  - aarch64\n", "  - aarch64\n  - armv7\n"), "'armv7' is deprecated"),
    (lambda c: edit(c, "startup: application", "startup: application\nadvanced: true"), "deprecated key 'advanced'"),
    (lambda c: edit(c, "slug: cast2mqtt", "slug: cast 2 mqtt"), "slug"),
])
def test_the_walk_would_see_a_broken_repository(change, expected):
    """Each change to a copy of the tree makes the walk above fail, as the Supervisor would."""
    with tempfile.TemporaryDirectory(prefix="cast2mqtt-clone-") as d:
        copy = clone_of(ROOT, pathlib.Path(d))
        assert walk(copy)[2] == []
        change(copy)
        _, addons, problems = walk(copy)
        assert any(expected in p for p in problems), problems


def test_what_the_walk_skips_as_the_supervisor_does():
    """A config.yaml under a hidden folder or a rootfs folder is not an add-on."""
    with tempfile.TemporaryDirectory(prefix="cast2mqtt-clone-") as d:
        copy = clone_of(ROOT, pathlib.Path(d))
        for folder in (".github/x", "deploy/home-assistant-addon/cast2mqtt/rootfs/etc"):
            (copy / folder).mkdir(parents=True)
            (copy / folder / "config.yaml").write_text("not: an add-on\n")
        _, addons, problems = walk(copy)
        assert problems == [] and list(addons) == [str(ADDON)]


def edit(clone: pathlib.Path, old: str, new: str) -> None:
    path = clone / ADDON / "config.yaml"
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new, 1))


def load(name: str):
    return read(ROOT / ADDON / name)


def test_the_image_the_supervisor_pulls():
    """`image` names the image a release pushes for each architecture, at the tag `version`; the
    add-on is never built by the Supervisor (no build.* file, and it would lack the binary)."""
    config = load("config.yaml")
    assert "{arch}" in config["image"]
    for arch in config["arch"]:
        assert image_problems(config["image"].format(arch=arch)) == []
    assert isinstance(config["version"], str) and re.match(r"^\d+\.\d+\.\d+$", config["version"]), config["version"]
    assert not [p for p in (ROOT / ADDON).glob("**/build.*") if p.suffix in SUFFIXES], "build.yaml is deprecated"
    workflow = (ROOT / ".github/workflows/release.yml").read_text()
    assert "scripts/package addon" in workflow and "ADDON_RELEASE_IMAGE" in workflow
    package = (ROOT / "scripts/lib/package.sh").read_text()
    assert "addon_config image" in package, "scripts/package takes the image's name from config.yaml"


def test_the_dockerfile_names_its_base():
    """Without build.yaml the Supervisor passes no BUILD_FROM: the Dockerfile's default decides,
    Home Assistant's Debian bookworm base (the binary is built on bookworm, with its glibc)."""
    dockerfile = (ROOT / ADDON / "Dockerfile").read_text()
    arg = re.search(r"^ARG BUILD_FROM=(\S+)$", dockerfile, re.M)
    assert arg and arg.group(1) == "ghcr.io/home-assistant/base-debian:bookworm"
    lines = [line for line in dockerfile.splitlines() if line.startswith(("ARG BUILD_FROM", "FROM"))]
    assert lines == [arg.group(0), "FROM ${BUILD_FROM}"], lines
    assert not re.search(r"^ARG BUILD_ARCH=", dockerfile, re.M), "the architecture comes from the build"


def check_value(value, element: str, where: str) -> None:
    """An option's default fits its type (the Supervisor checks the user's options with it)."""
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


def check_defaults(options, schema, where: str) -> None:
    if isinstance(schema, str):
        check_value(options, schema, where)
    elif isinstance(schema, list):
        assert isinstance(options, list), f"{where}: the default of a list is a list"
        for n, item in enumerate(options):
            check_defaults(item, schema[0], f"{where}[{n}]")
    else:
        assert isinstance(options, dict), f"{where}: the default must be a mapping"
        for key, value in options.items():
            assert key in schema, f"{where}.{key}: an option without a schema entry"
            check_defaults(value, schema[key], f"{where}.{key}")
        for key, element in schema.items():
            optional = isinstance(element, str) and element.endswith("?")
            assert key in options or optional, f"{where}.{key}: required by the schema but has no default"


def test_our_choices_in_config_yaml():
    config = load("config.yaml")
    assert "mqtt:need" in config["services"]
    assert config["init"] is False, "tini is the image's PID 1: no init of Docker's"
    assert config["host_network"] is True, "mDNS needs the host's network"
    assert config["ingress"] is True and str(config["panel_icon"]).startswith("mdi:")
    # The port the web page listens on in the image, which the watchdog watches.
    port = config["ingress_port"]
    assert f"CAST2MQTT_WEB_LISTEN=0.0.0.0:{port}" in (ROOT / ADDON / "Dockerfile").read_text()
    assert config["watchdog"] == f"tcp://[HOST]:[PORT:{port}]"
    check_defaults(config["options"], config["schema"], "options")
    assert set(config["options"]) == {"log_level", "base_topic", "devices", "web_token"}
    assert config["schema"]["web_token"].startswith("password"), "the token is shown masked"


def test_the_files_of_the_addon():
    config = load("config.yaml")
    for name in ("DOCS.md", "CHANGELOG.md", "README.md", "translations/en.yaml"):
        assert (ROOT / ADDON / name).is_file(), name
    translations = load("translations/en.yaml")
    assert set(translations) <= {"configuration", "network"}
    assert set(translations["configuration"]) == set(config["options"]), "every option is named and described"
    for entry in translations["configuration"].values():
        assert isinstance(entry["name"], str) and isinstance(entry.get("description"), str)
    assert f"## {config['version']}" in (ROOT / ADDON / "CHANGELOG.md").read_text(), "the version has its notes"
    for name, size in (("icon.png", (128, 128)), ("logo.png", (250, 100))):
        data = (ROOT / ADDON / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", f"{name} is a PNG"
        assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == size, name


@pytest.mark.parametrize("version, ok", [("0.1.0", True), ("0.1.1", False), ("0.1.0-3-gabcdef0", False)])
def test_a_release_must_be_the_addons_version(version, ok):
    """`scripts/package release-check`, which the release workflow runs on a tag: the image the
    Supervisor pulls is tagged with config.yaml's version, so a tag that differs is refused."""
    assert load("config.yaml")["version"] == "0.1.0", "change the versions in this test with the add-on's"
    run = subprocess.run([str(ROOT / "scripts/package"), "release-check"], env={**os.environ, "CAST2MQTT_VERSION": version},
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    assert (run.returncode == 0) == ok, run.stdout
