"""The web page in a real browser (Debian's headless chromium through Playwright) against the
daemon and cast-sim: every device listed, a pause reaching the simulated device, changes made on
the device showing without a reload, a device going offline and coming back, a command error,
the metrics after known traffic, /healthz following the loop, a foreign Origin refused.

Tests run in file order and share one bridge; each leaves the devices as it found them or says
what it changed. test_web_token.py has the token on a non-loopback address.
"""

from __future__ import annotations

import json
import re
import socket
import time
import uuid

import pytest
import requests

from conftest import ID, TOPICS, wait_for

LIVING, KITCHEN, BEDROOM, OFFICE, GARDEN = (TOPICS[n] for n in ("Living Room TV", "Kitchen", "Bedroom Speaker", "Office Display", "Garden Speaker"))


def card(page, topic: str):
    return page.locator(f'article.card[data-device="{topic}"]')


def text_of(page, selector: str) -> str:
    locator = page.locator(selector)
    return locator.inner_text() if locator.count() else ""


def wait_text(page, selector: str, expected, timeout: float = 10, what: str | None = None) -> float:
    """Waits for `selector`'s text to match (a string, or a predicate); returns how long it took."""
    start = time.monotonic()
    check = expected if callable(expected) else (lambda text: text == expected)
    wait_for(lambda: check(text_of(page, selector)), timeout, 0.05, what or f"{selector} to be {expected!r}")
    return time.monotonic() - start


def load(mqtt, topic: str, **body) -> dict:
    """A `load` through MQTT; returns its response."""
    command_id = f"t-{uuid.uuid4().hex[:8]}"
    body["id"] = command_id
    mqtt.publish(f"cast2mqtt/{topic}/command/load", json.dumps(body))
    return wait_for(lambda: (r := mqtt.json(f"cast2mqtt/{topic}/response")) and r.get("id") == command_id and r, 20, 0.05,
                    f"the load on {topic} to be answered")


def metrics(bridge) -> dict[str, float]:
    text = requests.get(f"{bridge.url}/metrics", timeout=10).text
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def upgrade(url: str, origin: str | None, cookie: str | None = None) -> int:
    """Status of a WebSocket upgrade request (101 = accepted)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    lines = [f"GET /ws HTTP/1.1", f"Host: {host}:{port}", "Upgrade: websocket", "Connection: Upgrade",
             "Sec-WebSocket-Version: 13", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]
    if origin:
        lines.append(f"Origin: {origin}")
    if cookie:
        lines.append(f"Cookie: {cookie}")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = s.recv(4096).decode(errors="replace")
    return int(head.split(" ", 2)[1])


def test_the_page_lists_every_device(page, bridge, sim, mqtt, art):
    # What the screenshots show: three devices playing something, one with a queue.
    load(mqtt, LIVING, url="http://media.example/film.mp4", title="Big Buck Bunny", subtitle="Blender Foundation",
         content_type="video/mp4", images=[art.url("film")])
    load(mqtt, BEDROOM, url="http://media.example/rain.mp3", title="Rain Sounds", artist="Nature Recordings",
         content_type="audio/mpeg", images=[art.url("rain")])
    load(mqtt, GARDEN, queue=[{"url": "http://media.example/jazz-1.mp3", "title": "Morning Jazz", "artist": "The Simulators",
                               "images": [art.url("jazz")]},
                              {"url": "http://media.example/jazz-2.mp3", "title": "Blue in Green", "artist": "The Simulators",
                               "images": [art.url("blue")]}])
    page.goto(page.base + "/")
    wait_for(lambda: page.locator("article.card").count() == len(TOPICS), 15, 0.05, "a card per device")
    names = {card(page, topic).locator('[data-role="name"]').inner_text() for topic in TOPICS.values()}
    assert names == set(TOPICS)
    for topic in TOPICS.values():
        wait_text(page, f'article.card[data-device="{topic}"] [data-role="status"]', lambda t: t not in ("", "offline"),
                  what=f"{topic} to show online")
    wait_text(page, f'article.card[data-device="{LIVING}"] [data-role="title"]', "Big Buck Bunny")
    wait_text(page, f'article.card[data-device="{GARDEN}"] [data-role="artist"]', "The Simulators")
    assert card(page, LIVING).locator('[data-role="status"]').inner_text() == "playing"
    assert page.locator('[data-role="count"]').inner_text() == f"{len(TOPICS)} of {len(TOPICS)}"
    # Search and filter.
    page.fill('input[type="search"]', "rain")
    wait_for(lambda: page.locator("article.card:visible").count() == 1, 5, 0.05, "the search to leave one card")
    page.fill('input[type="search"]', "")
    page.click('button[data-filter="playing"]')
    wait_for(lambda: page.locator("article.card:visible").count() == 3, 5, 0.05, "three playing devices")
    page.click('button[data-filter="all"]')
    wait_for(lambda: page.locator("article.card:visible").count() == len(TOPICS), 5, 0.05, "all devices again")


def test_a_click_on_pause_reaches_the_simulated_device(page, bridge, sim, mqtt):
    page.goto(page.base + "/")
    wait_text(page, f'article.card[data-device="{LIVING}"] [data-role="status"]', "playing")
    before = len(sim.received(ID["Living Room TV"], "urn:x-cast:com.google.cast.media", "PAUSE"))
    card(page, LIVING).locator('button[data-command="pause"]').click()
    wait_for(lambda: len(sim.received(ID["Living Room TV"], "urn:x-cast:com.google.cast.media", "PAUSE")) == before + 1, 10, 0.05,
             "the device to receive PAUSE")
    wait_text(page, f'article.card[data-device="{LIVING}"] [data-role="status"]', "paused")
    card(page, LIVING).locator('button[data-command="play"]').click()
    wait_text(page, f'article.card[data-device="{LIVING}"] [data-role="status"]', "playing")


def test_changes_on_the_device_show_without_a_reload(page, bridge, sim, mqtt):
    import pychromecast

    page.goto(page.base + "/")
    slider = card(page, KITCHEN).locator('input[type="range"]')
    wait_for(lambda: slider.input_value() == "50", 10, 0.05, "the kitchen volume at 50 %")
    sim.fault(ID["Kitchen"], {"action": "remote_volume", "level": 0.3})
    start = time.monotonic()
    wait_for(lambda: slider.input_value() == "30", 5, 0.02, "the volume a remote set to show")
    print(f"remote volume change shown after {time.monotonic() - start:.3f} s")

    # Another sender loads media on the office display.
    port = next(d["port"] for d in sim.devices if d["id"] == ID["Office Display"])
    cast = pychromecast.get_chromecast_from_host(("127.0.0.1", port, uuid.UUID(ID["Office Display"]), "Chromecast", "Office Display"),
                                                 tries=3, retry_wait=1, timeout=10)
    try:
        cast.wait(timeout=10)
        controller = cast.media_controller
        start = time.monotonic()
        controller.play_media("http://media.example/news.mp4", "video/mp4", title="Evening News", stream_type="BUFFERED")
        controller.block_until_active(timeout=10)
        wait_text(page, f'article.card[data-device="{OFFICE}"] [data-role="title"]', "Evening News", timeout=5)
        print(f"another sender's load shown after {time.monotonic() - start:.3f} s")
    finally:
        cast.disconnect(timeout=5)
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1, "no reload happened"


def test_an_offline_device_is_shown_as_such_and_comes_back(page, bridge, sim):
    page.goto(page.base + "/")
    status = f'article.card[data-device="{KITCHEN}"] [data-role="status"]'
    wait_text(page, status, lambda t: t not in ("", "offline"))
    sim.fault(ID["Kitchen"], {"action": "restart", "refuse_seconds": 3})
    wait_text(page, status, "offline", timeout=10)
    assert "offline" in card(page, KITCHEN).get_attribute("class")
    assert card(page, KITCHEN).locator('input[type="range"]').is_disabled()
    wait_text(page, status, lambda t: t not in ("", "offline"), timeout=20, what="the kitchen to come back")


def test_a_command_error_is_shown(page, bridge, sim, mqtt, screenshots):
    page.goto(page.base + f"/device/{KITCHEN}")
    page.fill('form[data-role="cast"] input[name="url"]', "http://media.example/fail-104.mp3")
    page.click('form[data-role="cast"] button[data-command="load"]')
    toast = page.locator(".toast.error")
    wait_for(lambda: toast.count() > 0 and "load failed" in toast.first.inner_text().lower(), 15, 0.05, "the error to be shown")
    wait_for(lambda: "load → error" in text_of(page, '[data-role="responses"]'), 5, 0.05, "the response in the list")
    wait_for(lambda: "load_failed" in text_of(page, '[data-role="events"]'), 5, 0.05, "the load_failed event")
    page.goto(page.base + f"/device/{LIVING}")
    wait_text(page, '[data-role="title"]', "Big Buck Bunny")
    page.screenshot(path=str(screenshots / "web-device.png"), full_page=True)


def test_the_queue_and_the_bridge_page(page, bridge, screenshots):
    page.goto(page.base + f"/device/{GARDEN}")
    wait_for(lambda: page.locator('[data-role="queue"] li').count() == 2, 10, 0.05, "the queue")
    assert "playing" in page.locator('[data-role="queue"] li.current').inner_text()
    page.locator('button[data-command="next"]').click()
    wait_text(page, '[data-role="title"]', "Blue in Green", timeout=10)
    page.goto(page.base + "/bridge")
    wait_text(page, '[data-role="mqtt"]', "connected")
    wait_text(page, '[data-role="devices"]', str(len(TOPICS)))
    wait_text(page, '[data-role="health"]', "healthy")
    configuration = page.locator('[data-role="configuration"]').inner_text()
    assert "listen:" in configuration and "base_topic" in configuration
    wait_for(lambda: "load failed" in text_of(page, '[data-role="logs"]'), 10, 0.1, "the failed load in the log tail")
    page.screenshot(path=str(screenshots / "web-bridge.png"), full_page=False)


def test_screenshots_of_the_simulated_home(browser, bridge, screenshots):
    for name, options in (("web-devices", {"viewport": {"width": 1360, "height": 820}, "color_scheme": "light"}),
                          ("web-devices-dark", {"viewport": {"width": 1360, "height": 820}, "color_scheme": "dark"}),
                          ("web-phone", {"viewport": {"width": 390, "height": 844}, "color_scheme": "light",
                                         "device_scale_factor": 2, "is_mobile": True, "has_touch": True})):
        context = browser.new_context(**options)
        page = context.new_page()
        page.goto(bridge.url + "/")
        wait_for(lambda: page.locator("article.card").count() == len(TOPICS), 15, 0.05, "the cards")
        # The artwork in view is drawn (cards further down load theirs when scrolled to).
        wait_for(lambda: page.evaluate("""(() => {
            const shown = [...document.querySelectorAll('article.card img')].filter(i => i.getBoundingClientRect().top < innerHeight);
            return shown.length > 0 && shown.every(i => i.complete && i.naturalWidth > 0); })()"""), 10, 0.05, "the artwork")
        page.screenshot(path=str(screenshots / f"{name}.png"))
        context.close()


def test_metrics_count_exactly_what_happened(bridge, mqtt):
    before = metrics(bridge)
    for n in range(3):
        mqtt.publish(f"cast2mqtt/{KITCHEN}/command/volume", json.dumps({"percent": 40 + n, "id": f"m{n}"}))
        wait_for(lambda: (mqtt.json(f"cast2mqtt/{KITCHEN}/response") or {}).get("id") == f"m{n}", 10, 0.02, f"volume {n}")
    for n in range(2):
        mqtt.publish("cast2mqtt/no_such_device/command/play", json.dumps({"id": f"u{n}"}))
        wait_for(lambda: (mqtt.json("cast2mqtt/no_such_device/response") or {}).get("id") == f"u{n}", 10, 0.02, f"play {n}")
    after = metrics(bridge)

    def delta(series: str) -> float:
        return after.get(series, 0) - before.get(series, 0)

    assert delta('cast2mqtt_commands_total{command="volume",code="ok"}') == 3
    assert delta('cast2mqtt_command_duration_seconds_count{command="volume",code="ok"}') == 3
    assert delta('cast2mqtt_commands_total{command="play",code="unknown_device"}') == 2
    assert delta('cast2mqtt_cast_request_duration_seconds_count{operation="set_volume",result="ok"}') == 3
    assert delta('cast2mqtt_mqtt_messages_total{direction="in"}') >= 5
    assert after["cast2mqtt_devices"] == len(TOPICS)
    assert after["cast2mqtt_devices_online"] == len(TOPICS)
    assert after["cast2mqtt_mqtt_connected"] == 1
    assert sum(v for k, v in after.items() if k.startswith("cast2mqtt_cast_disconnects_total{")) >= 1, "the kitchen's restart"
    assert after['cast2mqtt_cast_connects_total{kind="reconnected"}'] >= 1
    assert after['cast2mqtt_cast_messages_total{direction="in"}'] > 0 and after['cast2mqtt_cast_bytes_total{direction="out"}'] > 0
    assert after["process_resident_memory_bytes"] > 0 and after["process_open_fds"] > 0


def test_healthz_follows_the_loop(bridge, mqtt):
    assert requests.get(f"{bridge.url}/healthz", timeout=5).status_code == 200
    mqtt.publish("cast2mqtt/bridge/request/debug_stall", "8")
    wait_for(lambda: requests.get(f"{bridge.url}/healthz", timeout=5).status_code == 503, 15, 0.2, "/healthz to fail")
    wait_for(lambda: requests.get(f"{bridge.url}/healthz", timeout=5).status_code == 200, 20, 0.2, "/healthz to recover")


def bridge_request(mqtt, name: str, body: dict) -> dict:
    """A bridge request through MQTT; returns its response."""
    request_id = f"t-{uuid.uuid4().hex[:8]}"
    mqtt.publish(f"cast2mqtt/bridge/request/{name}", json.dumps({**body, "id": request_id}))
    return wait_for(lambda: (r := mqtt.json(f"cast2mqtt/bridge/response/{name}")) and r.get("id") == request_id and r, 15, 0.05,
                    f"the answer to {name}")


def cast_lines(page) -> list[str]:
    return [line for line in text_of(page, '[data-role="logs"]').splitlines() if "cast message" in line]


def test_the_trace_switch_logs_one_devices_cast_traffic(page, bridge, mqtt):
    page.goto(page.base + f"/device/{KITCHEN}")
    switch = page.locator('input[data-role="trace"]')
    wait_for(lambda: switch.is_enabled(), 15, 0.05, "the switch to read the bridge's levels")
    assert not switch.is_checked()
    switch.check()
    wait_for(lambda: switch.is_enabled() and switch.is_checked(), 15, 0.05, "the bridge to confirm")
    assert KITCHEN in bridge_request(mqtt, "log_level", {})["data"]["devices"]
    try:
        # Both devices talk; only the kitchen's messages reach the log (the others stay at info).
        for topic in (LIVING, KITCHEN):
            mqtt.publish(f"cast2mqtt/{topic}/command/refresh", "{}")
        page.goto(page.base + "/bridge")
        wait_for(lambda: any("RECEIVER_STATUS" in line for line in cast_lines(page)), 15, 0.1, "the kitchen's traffic in the log")
        lines = cast_lines(page)
        assert all("Kitchen" in line for line in lines), lines[:5]
        assert any("cast.payload=" in line for line in lines), "payloads at trace"
    finally:
        page.goto(page.base + f"/device/{KITCHEN}")
        wait_for(lambda: switch.is_enabled() and switch.is_checked(), 15, 0.05, "the switch to show it on")
        switch.uncheck()
        wait_for(lambda: switch.is_enabled() and not switch.is_checked(), 15, 0.05, "the bridge to confirm it off")
    assert bridge_request(mqtt, "log_level", {})["data"]["devices"] == []


def test_a_queue_item_plays_when_clicked(page, bridge, mqtt):
    load(mqtt, KITCHEN, queue=[{"url": "http://media.example/q-1.mp3", "title": "First"},
                              {"url": "http://media.example/q-2.mp3", "title": "Second"}])
    page.goto(page.base + f"/device/{KITCHEN}")
    # The device lists its queue by ids; the bridge fetches the titles, the page shows them.
    wait_for(lambda: "Second" in text_of(page, '[data-role="queue"]'), 15, 0.05, "the queue's titles")
    page.locator('[data-role="queue"] li:not(.current) button[data-command="jump"]').click()
    wait_text(page, '[data-role="title"]', "Second", timeout=10)
    mqtt.publish(f"cast2mqtt/{KITCHEN}/command/quit", "{}")
    wait_for(lambda: mqtt.get(f"cast2mqtt/{KITCHEN}/state") == b"off", 15, 0.1, "the kitchen to be off again")


def test_the_websocket_refuses_a_foreign_origin(bridge):
    assert upgrade(bridge.url, "http://evil.example") == 400, "the upgrade is refused"
    assert upgrade(bridge.url, bridge.url) == 101
    refused = requests.get(f"{bridge.url}/ws", headers={"Origin": "http://evil.example"}, timeout=5)
    assert refused.status_code == 403 and "cross-origin" in refused.json()["error"]
    # A page elsewhere whose name resolves to 127.0.0.1 (DNS rebinding) gets nothing either.
    response = requests.get(f"{bridge.url}/api/session", headers={"Host": "evil.example"}, timeout=5)
    assert response.status_code == 403


def test_check_config_refuses_a_network_address_without_a_token(workdir):
    import subprocess

    config = workdir / "open.yaml"
    config.write_text('web:\n  listen: "0.0.0.0:8199"\n')
    result = subprocess.run([bridge_binary(), "check-config", "--config", str(config)], capture_output=True, text=True, timeout=30)
    assert result.returncode == 2
    assert re.search(r"web\.listen: 0\.0\.0\.0:8199 is not a loopback address.*web\.token", result.stderr), result.stderr


def bridge_binary() -> str:
    import harness

    return harness.CAST2MQTT
