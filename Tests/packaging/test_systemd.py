"""The .deb's systemd unit under a running systemd: a Debian container (mmdebstrap, cached) whose
PID 1 is systemd (`podman run --systemd=always`), host networking, the package installed with
dpkg the way a user does (enabled on install), its conffile edited to a test broker on a free
127.0.0.1 port and a cast-sim device, then `systemctl start`:

  - Type=notify: `systemctl start` returns once the bridge said READY, and the unit is active,
  - the whole sandbox of the unit holds (a directive the bridge trips on would fail the start or
    the connections): the device is published `online`,
  - the bridge runs as its dynamic user (not root) and keeps its state in
    /var/lib/private/cast2mqtt behind /var/lib/cast2mqtt,
  - `systemctl stop` publishes `offline` and the unit ends with status 0,
  - `systemd-analyze security` of the installed unit (printed),
  - purge removes the state directory and the configuration.

Environment: CAST2MQTT_DEB, CAST_SIM, CAST2MQTT_CACHE, CAST2MQTT_PODMAN_RUNTIME. Needs root.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "Tests/homeassistant"))

from chroot import base_rootfs, wait_until  # noqa: E402
from harness import CastSim, Mosquitto, MQTTObserver  # noqa: E402
from test_deb import the_deb  # noqa: E402
from test_image import LIMITS, podman  # noqa: E402

# Skipped without root or podman, except under CI (CI=true), where a missing tool is a failure.
pytestmark = pytest.mark.skipif(os.environ.get("CI") != "true" and (os.geteuid() != 0 or not shutil.which("podman")),
                                reason="needs root and podman")

SYSTEMD_PACKAGES = ["systemd", "systemd-sysv", "dbus", "libavahi-client3", "libmosquitto1"]


@pytest.fixture(scope="module")
def systemd_image() -> str:
    tarball = base_rootfs("systemd-base", "--slim", *SYSTEMD_PACKAGES)
    name = "localhost/cast2mqtt-systemd-test:" + tarball.stem.replace("systemd-base-", "")
    if podman("image", "exists", name, check=False).returncode != 0:
        podman("import", "--change", 'CMD ["/lib/systemd/systemd"]', str(tarball), name, timeout=600)
    return name


@pytest.fixture()
def machine(systemd_image):
    name = f"cast2mqtt-systemd-test-{os.getpid()}"
    podman("rm", "-f", "--ignore", name)
    podman("run", "-d", "--name", name, "--systemd=always", "--network", "host", *LIMITS, systemd_image,
           "/lib/systemd/systemd")
    try:
        def booted() -> bool:
            state = podman("exec", name, "systemctl", "is-system-running", check=False).stdout.strip()
            return state in ("running", "degraded")

        wait_until(booted, 60, "systemd in the container to finish booting")
        yield name
    finally:
        podman("rm", "-f", "--ignore", name, check=False)


def sh(machine: str, script: str, check: bool = True) -> str:
    return podman("exec", machine, "sh", "-c", script, check=check, timeout=300).stdout


def test_unit_under_systemd(machine):
    deb = the_deb()
    podman("cp", str(deb), f"{machine}:/tmp/cast2mqtt.deb")
    # Installed as a user would, but not started until the test's configuration is in place (its
    # default broker, 127.0.0.1:1883, is the host's here).
    sh(machine, "printf '#!/bin/sh\\nexit 101\\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && "
                "dpkg -i /tmp/cast2mqtt.deb && rm /usr/sbin/policy-rc.d /tmp/cast2mqtt.deb")
    assert sh(machine, "systemctl is-enabled cast2mqtt").strip() == "enabled"

    with tempfile.TemporaryDirectory(prefix="cast2mqtt-systemd-test-") as d:
        workdir = pathlib.Path(d)
        broker = Mosquitto(workdir)
        sim = CastSim(workdir, [("Living Room TV", "0123456789abcdef0123456789abcdef")])
        observer = MQTTObserver(broker)
        try:
            config = {"mqtt": {"url": broker.url, "client_id": f"cast2mqtt-systemd-{os.getpid()}"},
                      "discovery": {"mdns": False, "devices": sim.static_devices()},
                      "web": {"listen": "127.0.0.1:0"}}
            sh(machine, f"cat > /etc/cast2mqtt/config.yaml <<'EOF'\n{json.dumps(config)}\nEOF")

            # Type=notify: start returns after READY=1.
            sh(machine, "systemctl start cast2mqtt")
            assert sh(machine, "systemctl is-active cast2mqtt").strip() == "active"
            wait_until(lambda: observer.get("cast2mqtt/living_room_tv/availability") == b"online", 30,
                       "the device online through the service")

            pid = sh(machine, "systemctl show -p MainPID --value cast2mqtt").strip()
            uid = re.search(r"^Uid:\s+(\d+)", sh(machine, f"cat /proc/{pid}/status"), re.M).group(1)
            assert uid != "0", "the service runs as root"
            assert sh(machine, "readlink /var/lib/cast2mqtt").strip() == "private/cast2mqtt"
            wait_until(lambda: "published.json" in sh(machine, "ls /var/lib/private/cast2mqtt"), 10,
                       "the state file in the StateDirectory")

            security = sh(machine, "systemd-analyze security --no-pager cast2mqtt", check=False)
            print("\n" + security.strip().splitlines()[-1])

            sh(machine, "systemctl stop cast2mqtt")
            wait_until(lambda: observer.get("cast2mqtt/bridge/state") == b"offline", 10, "bridge/state offline")
            shown = sh(machine, "systemctl show -p Result -p ExecMainStatus cast2mqtt")
            assert "Result=success" in shown and "ExecMainStatus=0" in shown, shown
        finally:
            observer.close()
            sim.stop()
            broker.stop()

    sh(machine, "dpkg --purge cast2mqtt")
    left = sh(machine, "ls -d /etc/cast2mqtt /var/lib/cast2mqtt /var/lib/private/cast2mqtt 2>/dev/null; true")
    assert not left.strip(), f"left after purge: {left}"
