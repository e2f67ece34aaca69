"""The container image (scripts/package image, deploy/container/Containerfile), run with podman
the way docs/install.md tells users to:

  - host networking against a mosquitto broker on a free 127.0.0.1 port and cast-sim, with
    /data a directory of the test holding config.yaml (the static devices): every device comes
    online (seconds from `podman run` printed), a command reaches the simulated device, /healthz
    answers (and podman's HEALTHCHECK passes), the bridge runs as uid 10001, `podman stop` ends
    it on SIGTERM (exit status 0: podman did not have to SIGKILL it after its 10 s) with
    `offline` published (the seconds it took printed: timings belong to scripts/bench), and the
    state in /data is there after a restart;
  - mDNS on (the default) in a network namespace of its own with loopback only (`--network
    none`: no multicast leaves the machine): the image's own dbus-daemon and avahi-daemon start
    under their own users, the bridge reaches avahi-daemon over D-Bus, and `podman stop` leaves
    nothing running.

Environment: CAST2MQTT_IMAGE (default: dist/IMAGE), CAST_SIM, CAST2MQTT_PODMAN_RUNTIME. Needs root.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "Tests/homeassistant"))

from chroot import wait_until  # noqa: E402
from harness import CastSim, Mosquitto, MQTTObserver, free_port  # noqa: E402

DEVICES = [("Living Room TV", "0123456789abcdef0123456789abcdef"), ("Kitchen", "fedcba9876543210fedcba9876543210")]
LIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1000:1000"]

# Skipped without root or podman, except under CI (CI=true), where a missing tool is a failure.
pytestmark = pytest.mark.skipif(os.environ.get("CI") != "true" and (os.geteuid() != 0 or not shutil.which("podman")),
                                reason="needs root and podman")


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    runtime = os.environ.get("CAST2MQTT_PODMAN_RUNTIME") or shutil.which("runc")
    argv = ["podman"] + (["--runtime", runtime] if runtime else []) + list(args)
    result = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {result.returncode}:\n{result.stdout}")
    return result


@pytest.fixture(scope="module")
def image() -> str:
    name = os.environ.get("CAST2MQTT_IMAGE") or (ROOT / "dist/IMAGE").read_text().strip()
    podman("image", "exists", name)
    return name


@pytest.fixture()
def workdir():
    with tempfile.TemporaryDirectory(prefix="cast2mqtt-image-test-") as d:
        yield pathlib.Path(d)


class Container:
    def __init__(self, image: str, name: str, args: list[str], command: list[str] | None = None):
        self.name = name
        podman("rm", "-f", "--ignore", name)
        self.started = time.monotonic()
        podman("run", "-d", "--name", name, *LIMITS, *args, image, *(command or []))

    def logs(self) -> str:
        return podman("logs", self.name, check=False).stdout

    def running(self) -> bool:
        out = podman("inspect", "--format", "{{.State.Running}}", self.name, check=False).stdout.strip()
        return out == "true"

    def top(self) -> list[tuple[str, str]]:
        """(user, command) of every process in the container, as the host sees them."""
        out = podman("top", self.name, "user", "comm", check=False).stdout.splitlines()[1:]
        return [tuple(line.split(None, 1)) for line in out if line.strip()]  # type: ignore[misc]

    def stop(self) -> float:
        start = time.monotonic()
        podman("stop", "--time", "10", self.name)
        return time.monotonic() - start

    def exit_code(self) -> int:
        return int(podman("inspect", "--format", "{{.State.ExitCode}}", self.name).stdout.strip())

    def remove(self) -> None:
        podman("rm", "-f", "--ignore", self.name, check=False)


def devices_online(observer: MQTTObserver, container: Container) -> bool:
    assert container.running(), "the container exited:\n" + container.logs()
    states = [v for t, v in observer.topics("cast2mqtt/").items() if t.endswith("/availability")]
    return len(states) == len(DEVICES) and all(v == b"online" for v in states)


def test_image_with_host_network(image, workdir):
    broker = Mosquitto(workdir)
    sim = CastSim(workdir, DEVICES)
    observer = MQTTObserver(broker)
    data = workdir / "data"
    data.mkdir()
    import json
    (data / "config.yaml").write_text(json.dumps({"discovery": {"devices": sim.static_devices()}}))
    web_port = free_port()
    name = f"cast2mqtt-test-{os.getpid()}"
    args = ["--network", "host", "-v", f"{data}:/data",
            "-e", f"CAST2MQTT_MQTT_URL={broker.url}", "-e", f"CAST2MQTT_MQTT_CLIENT_ID=cast2mqtt-image-{os.getpid()}",
            "-e", "CAST2MQTT_DISCOVERY_MDNS=false", "-e", f"CAST2MQTT_WEB_LISTEN=127.0.0.1:{web_port}"]
    container = None
    try:
        container = Container(image, name, args)
        wait_until(lambda: devices_online(observer, container), 60, "both devices online")
        seconds = time.monotonic() - container.started
        print(f"\nimage: {seconds:.2f} s from podman run to every device online")

        # A command reaches the simulated device.
        device_id = DEVICES[0][1]
        observer.publish("cast2mqtt/living_room_tv/command/volume", "23")
        wait_until(lambda: sim.received(device_id, namespace="urn:x-cast:com.google.cast.receiver",
                                        type="SET_VOLUME"), 15, "SET_VOLUME to reach the simulated device")

        # /healthz on the host's loopback (host network), and podman's own HEALTHCHECK.
        with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/healthz", timeout=5) as answer:
            assert answer.status == 200
            assert json.loads(answer.read())["healthy"] is True
        podman("healthcheck", "run", name)

        # The bridge is not root; tini is PID 1.
        processes = container.top()
        users = {comm.strip(): user for user, comm in processes}
        assert users.get("cast2mqtt") == "cast2mqtt", processes
        assert any(comm.strip() == "tini" for _, comm in processes), processes

        # podman stop: SIGTERM through tini and the entrypoint; the bridge ends on it (status 0,
        # not podman's SIGKILL after 10 s) with offline published. The time it took is printed.
        took = container.stop()
        print(f"image: podman stop took {took:.2f} s")
        assert container.exit_code() == 0, container.logs()
        assert observer.get("cast2mqtt/bridge/state") == b"offline"
        state_files = sorted(p.name for p in data.iterdir() if p.name != "config.yaml")
        assert state_files, "no state written to /data"
        published = (data / "published.json").read_bytes() if (data / "published.json").exists() else None

        # Restart (the same /data): the state is read back and the devices come online again.
        for t in list(observer.topics("cast2mqtt/")):
            if t.endswith("/availability"):
                with observer.lock:
                    observer.latest.pop(t, None)
        podman("start", name)
        wait_until(lambda: devices_online(observer, container), 60, "both devices online after a restart")
        assert sorted(p.name for p in data.iterdir() if p.name != "config.yaml") == state_files
        if published is not None:
            assert (data / "published.json").exists()
        took = container.stop()
        print(f"image: podman stop took {took:.2f} s after the restart")
        assert container.exit_code() == 0, container.logs()
    finally:
        if container:
            print(container.logs()[-3000:])
            container.remove()
        observer.close()
        sim.stop()
        broker.stop()


def test_image_runs_its_own_dbus_and_avahi(image, workdir):
    name = f"cast2mqtt-test-mdns-{os.getpid()}"
    # --network none: a namespace with loopback only; the broker is unreachable, which is fine
    # here (the bridge retries), nothing is sent anywhere.
    args = ["--network", "none", "-e", "CAST2MQTT_LOG_LEVELS=discovery=debug"]
    container = Container(image, name, args)
    try:
        def daemons() -> dict[str, str] | None:
            assert container.running(), "the container exited:\n" + container.logs()
            users = {comm.strip(): user for user, comm in container.top()}
            wanted = ("dbus-daemon", "avahi-daemon", "cast2mqtt")
            return users if all(w in users for w in wanted) else None

        users = wait_until(daemons, 30, "dbus-daemon, avahi-daemon and the bridge running")
        assert users["cast2mqtt"] == "cast2mqtt"
        assert users["avahi-daemon"] == "avahi"
        assert users["dbus-daemon"] == "messagebus"
        # The entrypoint waits for avahi-daemon to be on the bus before it starts the bridge, so
        # the bridge finds it at once; on a slow machine (beyond the entrypoint's 10 s) it finds it
        # when it comes ("reachable again"). Either way it must browse.
        def browsing() -> bool:
            logs = container.logs()
            return "browsing _googlecast._tcp" in logs or "mDNS discovery resumed" in logs

        try:
            wait_until(browsing, 60, "the bridge to reach avahi-daemon over D-Bus")
        except AssertionError as error:
            raise AssertionError(f"{error}; the container's log:\n{container.logs()}") from None
        assert "started dbus-daemon and avahi-daemon" in container.logs()
        took = container.stop()
        print(f"image (mDNS): podman stop took {took:.2f} s")
        assert not container.running()
        assert container.exit_code() == 0, container.logs()
    finally:
        container.remove()
