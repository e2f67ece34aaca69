"""The test network helper itself (scripts/lib/netns.sh through scripts/lib/testnet.py): hosts
reach each other over the bridge, a link taken down black-holes (no reset), and nothing is left
behind — also when the process that built a network was killed before it could clean up."""

from __future__ import annotations

import errno
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

import testnet
from conftest import ROOT, report
from harness import wait_for


@pytest.fixture
def second(network):
    """A network of its own for each test here (removed with the run's prefix if the test dies)."""
    net = network.second()
    try:
        yield net
    finally:
        left = net.down()
        assert not left, left


def test_hosts_reach_each_other_and_a_link_taken_down_answers_nothing(second):
    a, b = second.address(0, 10), second.address(0, 11)
    second.add_host("a", a)
    second.add_host("b", b)
    # A listener on host a, a client on host b (their sockets made inside the namespaces).
    with second.inside("a"):
        server = socket.create_server((a, 8009))
    with second.inside("b"):
        client = socket.create_connection((a, 8009), timeout=5)
    peer, (source, _) = server.accept()
    assert source == b
    client.close()
    peer.close()
    # The root namespace is a host on the bridge too.
    socket.create_connection((a, 8009), timeout=5).close()
    server.accept()[0].close()

    second.link("a", up=False)
    started = time.monotonic()
    with pytest.raises(OSError) as failure:
        socket.create_connection((a, 8009), timeout=4)
    report("connect to a host whose link is down failed after", time.monotonic() - started)
    # A timeout (the SYN vanished) or "no route to host" (its ARP went unanswered): never a reset.
    assert isinstance(failure.value, TimeoutError) or failure.value.errno == errno.EHOSTUNREACH, failure.value
    second.link("a", up=True)
    wait_for(lambda: socket.create_connection((a, 8009), timeout=2).close() or True, 10, 0.2, "the link back up")
    server.close()
    assert second.leftovers(), "the network is there before down"
    assert not second.down()
    assert not second.leftovers()
    assert second.namespace("a") not in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                       text=True).stdout


def test_a_killed_run_leaves_nothing_once_its_prefix_is_taken_down(network):
    """What scripts/test's trap does after a killed test run: `netns.sh down <run prefix>`."""
    child = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import os, signal, subprocess, sys
        sys.path.insert(0, {str(ROOT / "scripts/lib")!r})
        import testnet
        net = testnet.TestNetwork(prefix=testnet._run("prefix", {network.prefix!r}), subnet=testnet._run("subnet"))
        net.add_host("h", net.address(0, 10))
        quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True)
        inside = subprocess.Popen(net.argv("h", ["sleep", "600"]), **quiet)
        outside = subprocess.Popen(["sleep", "600"], **quiet)
        net.track(outside.pid)
        print(net.prefix, inside.pid, outside.pid, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)], capture_output=True, text=True, timeout=60)
    assert child.returncode == -signal.SIGKILL, child.stderr
    prefix, inside, outside = child.stdout.split()
    pids = [int(inside), int(outside)]
    left = subprocess.run([str(testnet.HELPER), "leftovers", prefix], capture_output=True, text=True).stdout
    assert f"namespace {prefix}-h" in left and f"interface {prefix}br" in left and f"process {outside}" in left, left
    assert all(os.path.exists(f"/proc/{pid}") for pid in pids)

    down = subprocess.run([str(testnet.HELPER), "down", prefix], capture_output=True, text=True, timeout=120)
    assert down.returncode == 0, down.stderr
    left = subprocess.run([str(testnet.HELPER), "leftovers", prefix], capture_output=True, text=True)
    assert left.returncode == 0 and not left.stdout.strip(), left.stdout

    def reaped(pid: int) -> bool:
        # The sleeps were children of the killed process: init reaps them once they die.
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True
    wait_for(lambda: all(reaped(pid) for pid in pids), 10, 0.1, "the run's processes to be gone")

