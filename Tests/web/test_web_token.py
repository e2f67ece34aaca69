"""The page bound to a non-loopback address needs the token. This module makes a network
namespace of its own with a veth pair, one end holding 192.0.2.1 (TEST-NET-1, nothing real), moves
its test thread into it, and runs a broker, cast-sim, the bridge (listening on 192.0.2.1 with a
token) and the browser in there; the namespace is deleted afterwards. Nothing outside it changes."""

from __future__ import annotations

import ctypes
import os
import subprocess

import pytest
import requests

from conftest import CHROMIUM, DEVICES, TOPICS, CastSim, ConsoleWatch, Mosquitto, WebBridge, free_port, need, wait_for
from test_web import upgrade

TOKEN = "web-test-token-6f1c"
NAMESPACE = f"c2mweb{os.getpid() % 100000}"
CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def ip(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)


def setns(fd: int) -> None:
    """Moves this thread (and the processes it starts from now on) into the namespace `fd`."""
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "setns")


@pytest.fixture(scope="module")
def network(requirements, workdir):
    steps = [("netns", "add", NAMESPACE), ("-n", NAMESPACE, "link", "set", "lo", "up"),
             ("-n", NAMESPACE, "link", "add", "c2mweb0", "type", "veth", "peer", "name", "c2mweb1"),
             ("-n", NAMESPACE, "addr", "add", "192.0.2.1/24", "dev", "c2mweb0"),
             ("-n", NAMESPACE, "link", "set", "c2mweb0", "up"), ("-n", NAMESPACE, "link", "set", "c2mweb1", "up")]
    failure = None
    for step in steps:
        result = ip(*step)
        if result.returncode != 0:
            failure = f"cannot set up the test network (ip {' '.join(step)}): {result.stderr.strip()}"
            break
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    entered = False
    try:
        need(failure)
        inside = os.open(f"/var/run/netns/{NAMESPACE}", os.O_RDONLY)
        try:
            setns(inside)
            entered = True
        finally:
            os.close(inside)
        wrapper = workdir / "chromium-in-namespace"
        wrapper.write_text(f'#!/bin/sh\nexec ip netns exec {NAMESPACE} "{CHROMIUM}" "$@"\n')
        wrapper.chmod(0o755)
        yield str(wrapper)
    finally:
        if entered:
            setns(home)
        os.close(home)
        ip("netns", "delete", NAMESPACE)


@pytest.fixture(scope="module")
def token_bridge(network, workdir):
    directory = workdir / "namespace"
    directory.mkdir(exist_ok=True)
    broker = Mosquitto(directory)
    sim = CastSim(directory, DEVICES)
    bridge = WebBridge(directory, broker, sim.static_devices(), {"listen": f"192.0.2.1:{free_port()}", "token": TOKEN},
                       "token")
    try:
        bridge.start()
        bridge.wait_listening()
        yield bridge
        code = bridge.stop()
        assert code == 0, f"the bridge exited with {code}:\n{bridge.output()[-3000:]}"
    finally:
        if bridge.process is not None and bridge.process.alive():
            bridge.stop()
        sim.stop()
        broker.stop()


def test_a_token_is_needed_on_a_network_address(playwright_instance, network, token_bridge, screenshots):
    url = token_bridge.url
    assert requests.get(f"{url}/metrics", timeout=5).status_code == 401
    assert requests.get(f"{url}/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=5).status_code == 200
    assert requests.get(f"{url}/healthz", timeout=5).status_code == 401
    assert upgrade(url, url) == 400, "no WebSocket without the session"
    assert requests.get(f"{url}/ws", timeout=5).status_code == 401

    browser = playwright_instance.chromium.launch(executable_path=network, args=["--no-sandbox"])
    try:
        context = browser.new_context(viewport={"width": 1000, "height": 700})
        page = context.new_page()
        watch = ConsoleWatch(page)
        # A browser that just saw the namespace's link come up may abort its first navigation.
        for attempt in range(5):
            try:
                page.goto(url + "/")
                break
            except Exception as error:  # noqa: BLE001 - retried only for a network change
                if "ERR_NETWORK_CHANGED" not in str(error) or attempt == 4:
                    raise
                page.wait_for_timeout(500)
        form = page.locator('form[data-role="login"]')
        form.wait_for(timeout=10000)
        page.screenshot(path=str(screenshots / "web-login.png"))
        form.locator('input[name="token"]').fill("not-the-token")
        form.locator('button[type="submit"]').click()
        wait_for(lambda: "not right" in page.locator('[data-role="login-error"]').inner_text(), 10, 0.05, "the refusal")
        watch.errors = [e for e in watch.errors if "401" not in e]  # the browser reports the refused POST itself
        form.locator('input[name="token"]').fill(TOKEN)
        form.locator('button[type="submit"]').click()
        wait_for(lambda: page.locator("article.card").count() == len(TOPICS), 20, 0.05, "every device after the login")
        cookies = context.cookies()
        session = next(c for c in cookies if c["name"].startswith("cast2mqtt_session_"))
        assert session["httpOnly"] and session["sameSite"] == "Strict"
        assert TOKEN not in session["value"]
        # The cookie holds: a reload goes straight to the devices.
        page.reload()
        wait_for(lambda: page.locator("article.card").count() == len(TOPICS), 20, 0.05, "every device after a reload")
        # A foreign page cannot use the session: its WebSocket upgrade is refused.
        assert upgrade(url, "http://evil.example", f"{session['name']}={session['value']}") == 400
        assert upgrade(url, url, f"{session['name']}={session['value']}") == 101
        context.close()
        assert watch.errors == [], "the page logged errors:\n" + "\n".join(watch.errors)
    finally:
        browser.close()
    assert "web login failed" in token_bridge.output(), "a failed login is logged"
    assert token_bridge.output().count("web login failed") == 1, "once per source"
