"""The test network of scripts/lib/netns.sh, from Python (the fault tests in Tests/netns and
`scripts/bench netns`).

    net = TestNetwork()                     # prefix and range: $CAST2MQTT_NETNS_PREFIX / _RANGE or fresh
    net.add_host("mq", net.address(0, 2))   # namespace <prefix>-mq, eth0 10.N.0.2
    net.argv("mq", ["mosquitto", "-c", conf])   # run something on that host
    net.link("d1", up=False)                # cable out
    with net.inside("mq"): sock.connect(...)   # this thread's sockets are made on that host
    net.down()                              # everything; returns what was left (empty when clean)

Every call runs netns.sh (root, iproute2). The root namespace holds net.root (10.N.0.1) on the
bridge interface net.bridge.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pathlib
import shutil
import subprocess
from typing import Iterator

HELPER = pathlib.Path(__file__).resolve().with_name("netns.sh")
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


class NetworkError(Exception):
    pass


def _run(*args: str, input: str | None = None, timeout: float = 60) -> str:
    result = subprocess.run([str(HELPER), *args], capture_output=True, text=True, input=input, timeout=timeout)
    if result.returncode != 0:
        raise NetworkError(f"netns.sh {' '.join(args)}: exit {result.returncode}: {result.stderr.strip()}")
    return result.stdout.strip()


def missing_programs(*binaries: str) -> str | None:
    """Why the project's processes cannot run here: the first of `binaries` (paths) that is not an
    executable file, or mosquitto not installed; None when everything is there."""
    for path in binaries:
        if not os.access(path, os.X_OK):
            return f"{path} is missing (scripts/test builds it)"
    if shutil.which("mosquitto") is None:
        return "mosquitto is not installed"
    return None


def unavailable() -> str | None:
    """Why a test network cannot be built here, or None."""
    if os.geteuid() != 0:
        return "the test network needs root (network namespaces, a Linux bridge, veth pairs)"
    if shutil.which("ip") is None:
        return "iproute2 (ip) is not installed"
    probe = f"c2nprobe{os.getpid() % 100000}"
    result = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True, timeout=20)
    if result.returncode != 0:
        return f"cannot create a network namespace: {result.stderr.strip()}"
    subprocess.run(["ip", "netns", "delete", probe], capture_output=True, timeout=20)
    return None


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"setns: {os.strerror(errno)}")


class TestNetwork:
    __test__ = False  # not a pytest test class

    def __init__(self, prefix: str | None = None, subnet: str | None = None):
        self.prefix = prefix or os.environ.get("CAST2MQTT_NETNS_PREFIX") or _run("prefix")
        self.subnet = subnet or os.environ.get("CAST2MQTT_NETNS_RANGE") or _run("subnet")
        octets = self.subnet.split("/")[0].split(".")
        self._net = f"{octets[0]}.{octets[1]}"
        self.bridge = f"{self.prefix}br"
        self.hosts: dict[str, list[str]] = {}
        self.root = _run("up", self.prefix, self.subnet)

    def second(self) -> "TestNetwork":
        """Another network of the same run (its prefix starts with this one's, so `down` of the
        run's prefix removes it too)."""
        return TestNetwork(prefix=_run("prefix", self.prefix), subnet=_run("subnet"))

    def address(self, third: int, fourth: int) -> str:
        return f"{self._net}.{third}.{fourth}"

    def namespace(self, host: str) -> str:
        return f"{self.prefix}-{host}"

    def add_host(self, host: str, *addresses: str) -> None:
        _run("host", self.prefix, host, *addresses)
        self.hosts[host] = list(addresses)

    def add_addresses(self, host: str, first: str, count: int) -> None:
        _run("addresses", self.prefix, host, first, str(count))

    def argv(self, host: str, argv: list[str]) -> list[str]:
        """`argv` run on `host` (ip netns exec execs it: the PID is the command's own)."""
        return ["ip", "netns", "exec", self.namespace(host), *argv]

    def ip(self, host: str, *args: str) -> None:
        result = subprocess.run(["ip", "-n", self.namespace(host), *args], capture_output=True, text=True, timeout=20)
        if result.returncode != 0:
            raise NetworkError(f"ip -n {self.namespace(host)} {' '.join(args)}: {result.stderr.strip()}")

    def nft(self, host: str, ruleset: str) -> None:
        """Loads an nftables ruleset (text) on `host`."""
        result = subprocess.run(self.argv(host, ["nft", "-f", "-"]), input=ruleset, capture_output=True, text=True,
                                timeout=20)
        if result.returncode != 0:
            raise NetworkError(f"nft on {host}: {result.stderr.strip()}")

    def link(self, host: str, up: bool) -> None:
        _run("link", self.prefix, host, "up" if up else "down")

    def unplug(self, host: str) -> None:
        _run("unplug", self.prefix, host)
        self.hosts.pop(host, None)

    def track(self, pid: int) -> None:
        """A root-namespace process `down` stops if the test could not (a killed test run)."""
        _run("track", self.prefix, str(pid))

    @contextlib.contextmanager
    def inside(self, host: str) -> Iterator[None]:
        """Sockets this thread creates meanwhile belong to `host` (they stay there afterwards)."""
        home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        try:
            target = os.open(f"/var/run/netns/{self.namespace(host)}", os.O_RDONLY)
            try:
                _setns(target)
            finally:
                os.close(target)
            try:
                yield
            finally:
                _setns(home)
        finally:
            os.close(home)

    def leftovers(self) -> list[str]:
        result = subprocess.run([str(HELPER), "leftovers", self.prefix], capture_output=True, text=True, timeout=60)
        return [line for line in result.stdout.splitlines() if line.strip()]

    def down(self) -> list[str]:
        """Removes everything of the run; returns what could not be removed (empty when clean)."""
        subprocess.run([str(HELPER), "down", self.prefix], capture_output=True, text=True, timeout=120)
        return self.leftovers()


def kernel_loss_tools() -> dict[str, bool]:
    """What this kernel and userland offer for packet loss and delay in a namespace: `netem`
    (tc qdisc netem: loss and delay) and `nft` (nftables with `numgen random`: loss only)."""
    found = {"netem": False, "nft": False}
    probe = f"c2nloss{os.getpid() % 100000}"
    if subprocess.run(["ip", "netns", "add", probe], capture_output=True, timeout=20).returncode != 0:
        return found
    try:
        if shutil.which("tc"):
            found["netem"] = subprocess.run(
                ["ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "lo", "root", "netem", "loss", "1%"],
                capture_output=True, timeout=20).returncode == 0
        if shutil.which("nft"):
            found["nft"] = subprocess.run(
                ["ip", "netns", "exec", probe, "nft", "-f", "-"], capture_output=True, timeout=20, text=True,
                input="table inet probe {\n chain c {\n  type filter hook input priority 0; numgen random mod 100 < 1 drop\n }\n}\n",
            ).returncode == 0
    finally:
        subprocess.run(["ip", "netns", "delete", probe], capture_output=True, timeout=20)
    return found
