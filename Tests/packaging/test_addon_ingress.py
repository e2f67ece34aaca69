"""The Home Assistant add-on's web page in headless Chromium through an ingress-like proxy on 127.0.0.1
that serves it under /api/hassio_ingress/<token>/, adds X-Ingress-Path and connects to the bridge
from 127.0.0.2 (the ingress address, as 172.30.32.2 is in Home Assistant): every asset loads through
the proxy, the WebSocket is live, a click reaches a simulated device, no console error, while a
request straight to the bridge without the token is refused.
"""

from __future__ import annotations

import asyncio
import json
import os
import pathlib
import re
import sys
import threading
import urllib.error
import urllib.request

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "Tests/homeassistant"))

from addon_support import CHROMIUM, DEVICES, INGRESS_ADDRESS, INGRESS_PATH, WEB_TOKEN, Addon, needs_podman  # noqa: E402
from addon_support import addon_image, workdir  # noqa: E402, F401 - the fixtures
from chroot import wait_until  # noqa: E402


class IngressProxy:
    """Serves the bridge's page under INGRESS_PATH on 127.0.0.1, as the Supervisor's proxy does:
    the prefix is taken off, X-Ingress-Path is added, and the connection to the bridge comes from
    INGRESS_ADDRESS. One upstream connection per request (Connection: close); an upgrade is
    piped both ways, so the WebSocket passes through. Runs an asyncio loop in a thread."""

    def __init__(self, upstream_port: int):
        self.upstream_port = upstream_port
        self.requests: list[tuple[str, int]] = []
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(asyncio.start_server(self.handle, "127.0.0.1", 0))
            self.port = self.server.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert ready.wait(10)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{INGRESS_PATH}/"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_writer = None
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
            lines = head.decode("latin-1").split("\r\n")
            method, target, version = lines[0].split(" ", 2)
            if target == "/frame":
                # Home Assistant's panel: the add-on's page in a frame of the proxy's origin.
                body = f'<!doctype html><title>panel</title><iframe src="{INGRESS_PATH}/" width="900" height="700"></iframe>'.encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n"
                             + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
                await writer.drain()
                return
            if not (target == INGRESS_PATH or target.startswith(INGRESS_PATH + "/")):
                writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            path = target[len(INGRESS_PATH):] or "/"
            headers = [line for line in lines[1:] if line and not line.lower().startswith(("x-ingress-path:", "connection:"))]
            upgrade = any(line.lower().startswith("upgrade:") for line in headers)
            headers.append("Connection: Upgrade" if upgrade else "Connection: close")
            headers.append(f"X-Ingress-Path: {INGRESS_PATH}")
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self.upstream_port, local_addr=(INGRESS_ADDRESS, 0))
            upstream_writer.write(f"{method} {path} {version}\r\n".encode("latin-1")
                                  + "\r\n".join(headers).encode("latin-1") + b"\r\n\r\n")
            await upstream_writer.drain()
            status = {"code": 0}

            async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter, first: bool) -> None:
                try:
                    while data := await src.read(65536):
                        if first and status["code"] == 0:
                            m = re.match(rb"HTTP/1\.1 (\d+)", data)
                            status["code"] = int(m.group(1)) if m else -1
                        dst.write(data)
                        await dst.drain()
                except (ConnectionError, asyncio.CancelledError):
                    pass
                finally:
                    try:
                        dst.close()
                    except Exception:
                        pass

            await asyncio.wait_for(asyncio.gather(pipe(upstream_reader, writer, True), pipe(reader, upstream_writer, False)),
                                   timeout=600)
            self.requests.append((path, status["code"]))
        except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError, ValueError):
            pass
        finally:
            for w in (writer, upstream_writer):
                if w is not None:
                    w.close()

    def stop(self) -> None:
        def close() -> None:
            self.server.close()
            for task in asyncio.all_tasks(self.loop):
                task.cancel()
            self.loop.stop()
        self.loop.call_soon_threadsafe(close)
        self.thread.join(10)


@needs_podman
@pytest.mark.skipif(os.environ.get("CI") != "true" and not os.path.exists(CHROMIUM), reason="needs Debian's chromium")
def test_the_page_works_under_the_ingress_path(addon_image, workdir):
    from playwright.sync_api import sync_playwright

    addon = Addon(addon_image, workdir, web_token=WEB_TOKEN)
    proxy = None
    try:
        wait_until(addon.online, 90, "both devices online")
        direct = f"http://127.0.0.1:{addon.web_port}"
        wait_until(lambda: _status(f"{direct}/api/session") == 200, 30, "the page to listen")
        # Straight to the bridge: today's rules, the token is needed.
        assert _status(f"{direct}/healthz") == 401
        assert _session(f"{direct}/api/session") == {"auth_required": True, "authenticated": False}
        proxy = IngressProxy(addon.web_port)
        # Through the ingress proxy: no token.
        assert _session(proxy.url + "api/session") == {"auth_required": True, "authenticated": True}

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = browser.new_page()
                errors: list[str] = []
                failed: list[str] = []
                responses: list[tuple[str, int]] = []
                sockets: list[str] = []
                page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
                page.on("pageerror", lambda e: errors.append(f"uncaught: {e}"))
                page.on("requestfailed", lambda r: failed.append(r.url))
                page.on("response", lambda r: responses.append((r.url, r.status)))
                page.on("websocket", lambda ws: sockets.append(ws.url))
                page.goto(proxy.url)
                kitchen = 'article.card[data-device="kitchen"]'
                page.wait_for_selector(f'{kitchen} [data-role="status"]', timeout=30_000)
                page.wait_for_selector('#connection[data-state="live"]', timeout=30_000)
                # Every asset and request went through the ingress path and succeeded.
                prefix = f"http://127.0.0.1:{proxy.port}{INGRESS_PATH}/"
                assert responses and all(url.startswith(prefix) for url, _ in responses), responses
                assert all(status < 400 for _, status in responses), responses
                loaded = {url[len(prefix):] for url, _ in responses}
                assert {"", "app.css", "app.js", "connection.js", "favicon.svg", "api/session"} <= loaded, loaded
                assert failed == [], failed
                assert sockets == [f"ws://127.0.0.1:{proxy.port}{INGRESS_PATH}/ws"], sockets
                # A click reaches the simulated device (the mute button: SET_VOLUME).
                device_id = DEVICES[1][1]
                before = len(addon.sim.received(device_id, "urn:x-cast:com.google.cast.receiver", "SET_VOLUME"))
                page.locator(f'{kitchen} button[data-command="mute"]').click()
                wait_until(lambda: len(addon.sim.received(device_id, "urn:x-cast:com.google.cast.receiver", "SET_VOLUME")) > before,
                           15, "SET_VOLUME from the click to reach the simulated device")
                # A page of the page (client-side route) stays under the ingress path.
                page.locator(f'{kitchen} a[data-role="name"]').click()
                page.wait_for_url(f"{prefix}device/kitchen", timeout=10_000)
                page.reload()
                page.wait_for_selector('#connection[data-state="live"]', timeout=30_000)
                page.screenshot(path=str(workdir / "ingress.png"))
                assert errors == [], errors
                # In Home Assistant's panel (a frame of the proxy's origin) the page is shown: through
                # the proxy it may be framed by that origin; straight from the bridge by nobody.
                panel = browser.new_page()
                panel.goto(f"http://127.0.0.1:{proxy.port}/frame")
                panel.frame_locator("iframe").locator('#connection[data-state="live"]').wait_for(timeout=30_000)
                with urllib.request.urlopen(proxy.url, timeout=5) as answer:
                    assert answer.headers["X-Frame-Options"] == "SAMEORIGIN"
                    assert "frame-ancestors 'self'" in answer.headers["Content-Security-Policy"]
                with urllib.request.urlopen(direct + "/api/session", timeout=5) as answer:
                    assert answer.headers["X-Frame-Options"] == "DENY"
            finally:
                browser.close()
    finally:
        if proxy:
            proxy.stop()
        addon.stop()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def _session(url: str):
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.loads(answer.read())
