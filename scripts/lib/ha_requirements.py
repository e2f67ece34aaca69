"""Prints the pip requirements of the integrations the test's Home Assistant loads.

Run with the Home Assistant venv's interpreter (scripts/lib/ha.sh). The set is every integration
Home Assistant's bootstrap sets up by itself (its DEFAULT_/CORE_/STAGE_ sets) plus the ones the
test configures, closed over manifest "dependencies".
"""

import json
import pathlib
import sys

import homeassistant
from homeassistant import bootstrap

CONFIGURED = {"http", "api", "websocket_api", "mqtt", "logger", "onboarding", "auth", "config"}
SKIP = {"hassio"}  # only under the Supervisor: never loaded, and nothing it depends on is needed
# ... but its own requirements are: the MQTT config flow imports the Supervisor's client
# (aiohasupervisor) to offer the Mosquitto app, with or without a Supervisor.
REQUIREMENTS_ONLY = {"hassio"}

components = pathlib.Path(homeassistant.__file__).parent / "components"
wanted = set(CONFIGURED)
for name in dir(bootstrap):
    value = getattr(bootstrap, name)
    if name.isupper() and isinstance(value, (set, frozenset)) and all(isinstance(v, str) for v in value):
        wanted |= value
    if name.isupper() and isinstance(value, (list, tuple)):
        for item in value:
            # STAGE_x_INTEGRATIONS: list of (label, set, timeout)
            if isinstance(item, tuple):
                for part in item:
                    if isinstance(part, (set, frozenset)):
                        wanted |= {v for v in part if isinstance(v, str)}

seen: set[str] = set()
requirements: set[str] = set()
todo = sorted(wanted - SKIP)
while todo:
    domain = todo.pop()
    if domain in seen or domain in SKIP:
        continue
    seen.add(domain)
    manifest_path = components / domain / "manifest.json"
    if not manifest_path.is_file():
        continue
    manifest = json.loads(manifest_path.read_text())
    requirements.update(manifest.get("requirements", []))
    todo.extend(manifest.get("dependencies", []))

for domain in sorted(REQUIREMENTS_ONLY):
    manifest_path = components / domain / "manifest.json"
    if manifest_path.is_file():
        requirements.update(json.loads(manifest_path.read_text()).get("requirements", []))

print(f"# {len(seen)} integrations: {' '.join(sorted(seen))}", file=sys.stderr)
for requirement in sorted(requirements):
    print(requirement)
