"""The Home Assistant add-on's image run with podman the way the Supervisor starts it (addon_support.py):
the bridge takes its broker from a fake Supervisor that serves /services/mqtt only to its token,
connects as that user, the devices come online (seconds from `podman run` printed), the password is in
no log line, `podman stop` ends it on SIGTERM; a wrong token is refused and said so in the log.
First: the image is the one the Supervisor would pull on this machine (config.yaml's `image` for
this architecture, at the build's version), with Home Assistant's labels.
"""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys
import time

import yaml

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "Tests/homeassistant"))

from addon_support import MQTT_PASSWORD, MQTT_USER, SUPERVISOR_TOKEN, Addon, needs_podman  # noqa: E402
from addon_support import addon_image, workdir  # noqa: E402, F401 - the fixtures
from chroot import wait_until  # noqa: E402
from test_image import podman  # noqa: E402

# Home Assistant's names of Debian's architectures (scripts/lib/package.sh, addon_arch).
HA_ARCH = {"amd64": "amd64", "arm64": "aarch64"}
OCI_ARCH = {"amd64": "amd64", "aarch64": "arm64"}  # what the Supervisor asks the registry for


@needs_podman
def test_the_image_is_the_one_the_supervisor_pulls(addon_image):
    config = yaml.safe_load((ROOT / "deploy/home-assistant-addon/cast2mqtt/config.yaml").read_text())
    debian = subprocess.run(["dpkg", "--print-architecture"], check=True, stdout=subprocess.PIPE,
                            text=True).stdout.strip()
    arch = HA_ARCH[debian]
    assert arch in config["arch"]
    version = (ROOT / "dist/VERSION").read_text().strip()
    tag = re.sub(r"[^A-Za-z0-9_.-]", "_", version)
    pulled = f"{config['image'].format(arch=arch)}:{tag}"
    assert (ROOT / "dist/ADDON_RELEASE_IMAGE").read_text().strip() == pulled
    ids = {name: podman("image", "inspect", "--format", "{{.Id}}", name).stdout.strip() for name in (addon_image, pulled)}
    assert len(set(ids.values())) == 1, ids
    inspect = json.loads(podman("image", "inspect", pulled).stdout)[0]
    labels = inspect["Config"]["Labels"]
    assert labels["io.hass.type"] == "addon" and labels["io.hass.arch"] == arch, labels
    assert labels["io.hass.version"] == version, labels
    assert inspect["Architecture"] == OCI_ARCH[arch], inspect["Architecture"]


@needs_podman
def test_the_addon_takes_its_broker_from_the_supervisor(addon_image, workdir):
    addon = Addon(addon_image, workdir)
    try:
        wait_until(addon.online, 90, "both devices online")
        seconds = time.monotonic() - addon.container.started
        print(f"\nadd-on: {seconds:.2f} s from podman run to every device online")
        assert (("/services/mqtt", True)) in addon.supervisor.requests
        assert all(good for _, good in addon.supervisor.requests)
        logs = addon.container.logs()
        assert "MQTT broker from the Supervisor" in logs
        assert f"mqtt://127.0.0.1:{addon.broker.port}" in logs
        assert MQTT_PASSWORD not in logs and SUPERVISOR_TOKEN not in logs
        # The broker let the bridge in as that user (it refuses anyone else).
        assert re.search(rf"u'{MQTT_USER}'", addon.broker.log.read_text()), "the bridge logged in as the Supervisor's user"
        # The options: log level debug, the static devices by the names given.
        assert "debug" in logs.lower()
        # The bridge runs as uid 10001, and its copy of the options is its own.
        users = {comm.strip(): user for user, comm in addon.container.top()}
        assert users.get("cast2mqtt") == "cast2mqtt", users
        # podman stop: the bridge ends on SIGTERM (status 0, not podman's SIGKILL after 10 s).
        took = addon.container.stop()
        print(f"add-on: podman stop took {took:.2f} s")
        assert addon.container.exit_code() == 0, addon.container.logs()
        assert addon.observer.get("cast2mqtt/bridge/state") == b"offline"
    finally:
        addon.stop()


@needs_podman
def test_a_wrong_supervisor_token_is_refused_and_said(addon_image, workdir):
    addon = Addon(addon_image, workdir, token="not-the-supervisors-token")
    try:
        wait_until(lambda: "asking the Supervisor for the MQTT broker failed" in addon.container.logs(), 30,
                   "the refusal in the log")
        logs = addon.container.logs()
        assert "HTTP status 401" in logs
        assert addon.supervisor.requests and not any(good for _, good in addon.supervisor.requests)
        assert addon.observer.availability() == {}, "no broker, no devices"
        assert MQTT_PASSWORD not in logs
    finally:
        addon.stop()
