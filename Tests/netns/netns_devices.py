"""The simulated devices on the test network (conftest.py re-exports them): cast-sim in a
namespace of its own per device, and a host with a speaker group."""

from __future__ import annotations

import json
import pathlib
from typing import Any

# netns_settings first: it puts scripts/lib and Tests/homeassistant on sys.path.
from netns_settings import CAST_SIM
import testnet  # noqa: E402
from harness import Process, wait_for  # noqa: E402


class Device:
    """One cast-sim process on a test host of its own: its devices (and groups) on the host's
    addresses, announced over mDNS, the control endpoint on the first address."""

    def __init__(self, net: testnet.TestNetwork, workdir: pathlib.Path, host: str, address: str, name: str,
                 device_id: str):
        self.net = net
        self.workdir = workdir
        self.host = host
        self.address = address
        self.name = name
        self.id = device_id
        self.topic = name.lower().replace(" ", "_")
        self.process: Process | None = None
        self.control_port = 0
        self.starts = 0

    def argv(self) -> list[str]:
        return ["--own-addresses", self.address, "--device", f"{self.name}:0:{self.id}"]

    def start(self) -> None:
        assert self.process is None or not self.process.alive(), f"{self.name} runs already"
        self.starts += 1
        out = self.workdir / f"{self.host}-{self.starts}.out"
        argv = [CAST_SIM, *self.argv(), "--control-address", self.address, "--control-port", "0", "--mdns",
                "--launch-latency-ms", "50", "--reply-latency-ms", "1", "--log-level", "info"]
        # cast-sim prints its JSON lines on stdout, its log on stderr: both into one file is
        # fine for reading the control port (the log lines are not JSON).
        self.process = Process(f"cast-sim {self.name}", ["sh", "-c", 'exec "$@" 2>>"$0"',
                                                            str(self.workdir / f"{self.host}-{self.starts}.log"),
                                                            *self.net.argv(self.host, argv)], out)

        def ready() -> bool:
            if not self.process.alive():
                raise AssertionError(f"cast-sim exited:\n{self.log()}")
            for line in out.read_text(errors="replace").splitlines():
                if line.startswith("{") and "control_port" in line:
                    self.control_port = json.loads(line)["control_port"]
                    return True
            return False
        wait_for(ready, 20, 0.05, f"cast-sim {self.name} to listen")

    def log(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.workdir.glob(f"{self.host}-*.log")))

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def url(self, path: str) -> str:
        return f"http://{self.address}:{self.control_port}{path}"

    def control(self, method: str, path: str, body: Any = None) -> Any:
        import requests

        answer = requests.request(method, self.url(path), json=body, timeout=10)
        answer.raise_for_status()
        return answer.json()

    def fault(self, body: dict[str, Any]) -> None:
        answer = self.control("POST", f"/devices/{self.id}/fault", body)
        assert answer.get("ok"), answer

    def volume(self) -> float:
        state = self.control("GET", f"/devices/{self.id}/state")
        return float(state["receiverStatus"]["volume"]["level"])


DEVICES = {
    # host: (last octet, name, id)
    "d0": (10, "Net Other", "6e657400000000000000000000000010"),
    "d1": (11, "Net Link", "6e657400000000000000000000000011"),
    "d2": (12, "Net Reboot", "6e657400000000000000000000000012"),
    "d3": (13, "Net Cycle", "6e657400000000000000000000000013"),
    "d4": (14, "Net Move", "6e657400000000000000000000000014"),
    "d5": (15, "Net Gone", "6e657400000000000000000000000015"),
    "d6": (16, "Net Lossy", "6e657400000000000000000000000016"),
}
GROUP_HOST = "grp"
GROUP_MEMBERS = [(31, "Net Den", "6e657400000000000000000000000031"),
                 (32, "Net Hall", "6e657400000000000000000000000032")]
GROUP_NAME = "Net Group"
GROUP_PORT = 32190


class GroupHost(Device):
    """Two speakers on two addresses of one host and a group of them (one cast-sim process: a
    leader move needs both addresses in one simulator)."""

    def __init__(self, net: testnet.TestNetwork, workdir: pathlib.Path):
        members = [(net.address(0, octet), name, device_id) for octet, name, device_id in GROUP_MEMBERS]
        super().__init__(net, workdir, GROUP_HOST, members[0][0], members[0][1], members[0][2])
        self.members = members
        self.config = workdir / "group.yaml"
        lines = ["devices:"]
        lines += [f"  - {{name: {name}, address: {address}, cast_type: audio, id: {device_id}}}"
                  for address, name, device_id in members]
        lines += ["groups:", f"  - {{name: {GROUP_NAME}, members: [{', '.join(n for _, n, _ in members)}], "
                  f"port: {GROUP_PORT}}}", ""]
        self.config.write_text("\n".join(lines))

    def argv(self) -> list[str]:
        return ["--config", str(self.config)]

    def group(self) -> dict[str, Any]:
        groups = self.control("GET", "/groups")
        return next(g for g in groups if g["name"] == GROUP_NAME)
