"""Fixtures of the tests of several instances (issue #31): the test network, two brokers, two
segments of 100 simulated devices, three instances and an observer on each broker. One set for
the whole session (starting 200 devices and three bridges is the expensive part); the tests run in
file order and each leaves the three instances running and settled.

Environment: CAST2MQTT_BIN, CAST_SIM (built binaries), CAST2MQTT_NETNS_PREFIX / _RANGE (set by
scripts/test so its trap can remove the network whatever happens), CI=true (a missing
requirement fails instead of skipping).
"""

from __future__ import annotations

import pathlib
import signal
import time

import pytest

from inst_cluster import (CAST2MQTT, CAST_SIM, MEASURED, Broker, Instance, Observer, Segment, need, report,
                          testnet, wait_settled)


def pytest_terminal_summary(terminalreporter) -> None:  # noqa: ANN001
    if MEASURED:
        terminalreporter.section("times measured with three instances")
        for line in MEASURED:
            terminalreporter.write_line(line)


class Cluster:
    def __init__(self, net: testnet.TestNetwork, workdir: pathlib.Path):
        self.net = net
        self.workdir = workdir
        self.brokers = [Broker(net, workdir, "mq1", net.address(0, 2)), Broker(net, workdir, "mq2", net.address(0, 3))]
        self.observers = [Observer(net, b.host, 1883) for b in self.brokers]
        self.segments = {n: Segment(net, workdir, n) for n in (1, 2)}
        self.instances = {name: Instance(net, workdir, name, self.brokers, self.segments) for name in ("a", "b", "c")}
        # Which broker the instances are on (the failover test moves them to the second).
        self.current = 0

    @property
    def obs(self) -> Observer:
        return self.observers[self.current]

    def devices(self):  # noqa: ANN201
        return [d for s in self.segments.values() for d in s.devices]

    def revive(self) -> None:
        """Starts every instance a failed test left stopped or frozen, so the next test starts
        from three running instances."""
        for instance in self.instances.values():
            if instance.process is not None and instance.process.alive():
                instance.process.send_signal(signal.SIGCONT)
            else:
                instance.start()

    def settle(self, alive: set[str] | None = None, timeout: float = 90, what: str = "every device owned once"):
        return wait_settled(self.obs, self.segments, alive or set(self.instances), timeout, what)

    def close(self) -> list[str]:
        problems = []
        for name, instance in self.instances.items():
            code = instance.stop()
            if code not in (0, None, -9):
                problems.append(f"instance {name} exited with {code}:\n{instance.output()[-2000:]}")
        for observer in self.observers:
            observer.close()
        for segment in self.segments.values():
            segment.stop()
        for broker in self.brokers:
            broker.stop()
        return problems


@pytest.fixture(autouse=True)
def three_running(request) -> None:  # noqa: ANN001
    """Before each test: all three instances running (a failed test may have left one down)."""
    if "cluster" in request.fixturenames:
        request.getfixturevalue("cluster").revive()


@pytest.fixture(scope="session")
def cluster(tmp_path_factory):
    reason = testnet.unavailable() or testnet.missing_programs(CAST2MQTT, CAST_SIM)
    need(reason)
    net = testnet.TestNetwork()
    made: Cluster | None = None
    try:
        started = time.monotonic()
        made = Cluster(net, tmp_path_factory.mktemp("instances"))
        made.settle(timeout=150, what="all 200 devices owned, online and connected once at the start")
        report("start of three instances -> all 200 devices owned, online, one connection each",
               time.monotonic() - started)
        yield made
    finally:
        if made:
            for name, instance in made.instances.items():
                print(f"[instances] log of {name}: {instance.directory}")
        problems = made.close() if made else []
        left = net.down()
        assert not left, "the test network left things behind:\n" + "\n".join(left)
        assert not problems, "\n".join(problems)
