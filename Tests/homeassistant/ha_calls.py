"""Calling Home Assistant from an end-to-end test: a config flow step over REST, `call_service`
and other commands over the websocket, and a blocking call run in the background."""

from __future__ import annotations

import asyncio
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import requests

from harness import HomeAssistant


def flow(ha: HomeAssistant, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = requests.post(f"{ha.base}/api/config/config_entries/flow{path}", headers=ha.headers(),
                             json=body, timeout=30)
    return response.json()


def call_ws(ha: HomeAssistant, domain: str, service: str, data: dict[str, Any],
            return_response: bool = False, timeout: float = 90) -> dict[str, Any]:
    """`call_service` over the websocket; returns the whole result message (success or error)."""
    return ws_command(ha, {"type": "call_service", "domain": domain, "service": service, "service_data": data,
                           **({"return_response": True} if return_response else {})}, timeout)


def ws_command(ha: HomeAssistant, message: dict[str, Any], timeout: float = 90) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        import aiohttp

        token = ha.headers()["Authorization"].split(" ", 1)[1]
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(f"{ha.base}/api/websocket") as ws:
                await ws.receive_json(timeout=timeout)
                await ws.send_json({"type": "auth", "access_token": token})
                assert (await ws.receive_json(timeout=timeout))["type"] == "auth_ok"
                await ws.send_json({"id": 1, **message})
                while True:
                    reply = await ws.receive_json(timeout=timeout)
                    if reply.get("id") == 1 and reply.get("type") == "result":
                        return reply

    return asyncio.run(run())


def service(ha: HomeAssistant, domain: str, name: str, return_response: bool = False, **data: Any) -> Any:
    reply = call_ws(ha, domain, name, data, return_response)
    assert reply.get("success"), f"{domain}.{name} {data}: {reply}"
    return (reply.get("result") or {}).get("response")


def service_error(ha: HomeAssistant, domain: str, name: str, **data: Any) -> dict[str, Any]:
    reply = call_ws(ha, domain, name, data)
    assert not reply.get("success"), f"{domain}.{name} {data} should have failed: {reply}"
    return reply["error"]


_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ha-call")


def in_background(function, *args, **kwargs) -> Future:
    """Runs a blocking call (a service call that answers late on purpose) on a worker thread."""
    return _POOL.submit(function, *args, **kwargs)
