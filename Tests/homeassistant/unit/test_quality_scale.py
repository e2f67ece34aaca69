"""quality_scale.yaml against the code: every rule through Platinum listed once with a known state,
a reason for every exempt and todo, and for a rule marked done (or exempt) what the repository can
check of it: the file, the feature, the docs section, the CI gate."""

from __future__ import annotations

import json
import pathlib
import re
from collections.abc import Callable
from typing import Any

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[3]
INTEGRATION = ROOT / "custom_components" / "cast2mqtt"

# The rules of the integration quality scale (Home Assistant's script/hassfest/quality_scale.py),
# by tier.
RULES: dict[str, list[str]] = {
    "bronze": [
        "action-setup", "appropriate-polling", "brands", "common-modules", "config-flow-test-coverage",
        "config-flow", "dependency-transparency", "docs-actions", "docs-high-level-description",
        "docs-installation-instructions", "docs-removal-instructions", "entity-event-setup",
        "entity-unique-id", "has-entity-name", "runtime-data", "test-before-configure", "test-before-setup",
        "unique-config-entry",
    ],
    "silver": [
        "action-exceptions", "config-entry-unloading", "docs-configuration-parameters",
        "docs-installation-parameters", "entity-unavailable", "integration-owner", "log-when-unavailable",
        "parallel-updates", "reauthentication-flow", "test-coverage",
    ],
    "gold": [
        "devices", "diagnostics", "discovery-update-info", "discovery", "docs-data-update", "docs-examples",
        "docs-known-limitations", "docs-supported-devices", "docs-supported-functions", "docs-troubleshooting",
        "docs-use-cases", "dynamic-devices", "entity-category", "entity-device-class",
        "entity-disabled-by-default", "entity-translations", "exception-translations", "icon-translations",
        "reconfiguration-flow", "repair-issues", "stale-devices",
    ],
    "platinum": ["async-dependency", "inject-websession", "strict-typing"],
}
ALL_RULES = [rule for tier in RULES.values() for rule in tier]


def rules() -> dict[str, dict[str, str]]:
    data = yaml.safe_load((INTEGRATION / "quality_scale.yaml").read_text())
    out = {}
    for rule, value in data["rules"].items():
        out[rule] = {"status": value} if isinstance(value, str) else dict(value)
    return out


def code(name: str) -> str:
    path = INTEGRATION / name
    return path.read_text() if path.exists() else ""


def all_code() -> str:
    return "\n".join(path.read_text() for path in sorted(INTEGRATION.glob("*.py")))


def docs() -> str:
    return (ROOT / "docs" / "home-assistant.md").read_text()


def manifest() -> dict[str, Any]:
    return json.loads(code("manifest.json"))


def strings() -> dict[str, Any]:
    return json.loads(code("strings.json"))


def section(title: str) -> bool:
    return re.search(rf"^#+ {re.escape(title)}", docs(), re.M) is not None


def scripts_test() -> str:
    return (ROOT / "scripts" / "test").read_text()


def has_options_flow() -> bool:
    return "async_get_options_flow" in code("config_flow.py")


def check_strict_typing() -> None:
    config = (ROOT / "mypy.ini").read_text()
    assert re.search(r"^strict\s*=\s*true", config, re.M), "mypy.ini: strict = true"
    assert re.search(r"^files\s*=\s*custom_components/cast2mqtt\s*$", config, re.M), "mypy.ini: the whole integration"
    assert re.search(r'ha_(loopback_)?run(_in)? "\$HA_E2E_VERSION" python -m mypy', scripts_test()), "scripts/test runs mypy"
    assert "hass: Any" not in all_code()


def check_test_coverage() -> None:
    text = scripts_test()
    assert "--cov=custom_components/cast2mqtt" in text
    gate = re.search(r"--cov-fail-under=(\d+)", text)
    assert gate is not None and int(gate.group(1)) >= 95, "the coverage gate is at least 95 %"


def check_repair_issues() -> None:
    source = code("repairs.py")
    assert "ir.async_create_issue" in source and "ir.async_delete_issue" in source
    kinds = re.findall(r'^ISSUE_\w+: Final = "(\w+)"', source, re.M)
    assert kinds, "repairs.py names its issue kinds"
    for kind in kinds:
        assert {"title", "description"} <= set(strings()["issues"][kind]), kind
    assert "repairs." in code("bridge.py"), "the bridge raises them"


def check_icon_translations() -> None:
    icons = json.loads(code("icons.json"))
    actions = set(yaml.safe_load(code("services.yaml")))
    assert set(icons["services"]) == actions


def check_diagnostics() -> None:
    assert "async def async_get_config_entry_diagnostics" in code("diagnostics.py")
    assert "async_redact_data" in code("diagnostics.py")


def check_action_setup() -> None:
    init = code("__init__.py")
    setup = init.split("async def async_setup(", 1)[1].split("\nasync def ", 1)[0]
    assert "async_setup_services(hass)" in setup


def check_config_flow() -> None:
    assert manifest()["config_flow"] is True and "class " in code("config_flow.py")
    assert strings()["config"]["step"]["user"].get("data_description")


def check_discovery() -> None:
    assert manifest().get("mqtt") and "async_step_mqtt" in code("config_flow.py")


def check_reconfiguration_flow() -> None:
    assert "async_step_reconfigure" in code("config_flow.py")


def check_docs_configuration_parameters() -> None:
    assert has_options_flow(), "done means there are options to document"
    for option, label in strings()["options"]["step"]["init"]["data"].items():
        assert option in docs() or label in docs(), f"docs/home-assistant.md does not name the option {option}"


def check_stale_devices() -> None:
    assert "async_remove_config_entry_device" in code("__init__.py")
    assert "device_removed" in code("bridge.py")


def check_parallel_updates() -> None:
    assert re.search(r"^PARALLEL_UPDATES = \d+", code("media_player.py"), re.M)


def check_inject_websession() -> None:
    everything = all_code()
    assert "ClientSession(" not in everything and "httpx.AsyncClient(" not in everything
    if "aiohttp" in everything:
        assert "async_get_clientsession" in everything


def check_config_entry_unloading() -> None:
    assert "async def async_unload_entry" in code("__init__.py") and "async_on_unload" in code("__init__.py")


def check_runtime_data() -> None:
    assert "entry.runtime_data = " in code("__init__.py")


def check_has_entity_name() -> None:
    assert "_attr_has_entity_name = True" in code("media_player.py")


def check_entity_unique_id() -> None:
    assert "_attr_unique_id" in code("media_player.py")


def check_devices() -> None:
    assert "DeviceInfo(" in code("media_player.py") and "device_entry" in code("media_player.py")
    assert "async_get_device_by_identifier" in code("device_link.py")


def check_dynamic_devices() -> None:
    assert "async_listen_devices" in code("media_player.py")


def check_brands() -> None:
    assert (INTEGRATION / "brand" / "icon.png").exists() and (INTEGRATION / "brand" / "icon@2x.png").exists()


def check_integration_owner() -> None:
    assert manifest()["codeowners"]


def check_dependency_transparency() -> None:
    assert manifest()["requirements"] == []


def check_config_flow_test_coverage() -> None:
    assert (ROOT / "Tests/homeassistant/unit/test_config_flow.py").exists()


def check_test_before_setup() -> None:
    assert "ConfigEntryNotReady" in code("__init__.py")


def check_exception_translations() -> None:
    assert "translation_key" in code("errors.py") and strings()["exceptions"]


def check_entity_device_class() -> None:
    assert "MediaPlayerDeviceClass" in code("media_player.py")


def check_docs_examples() -> None:
    """An Examples section with automations whose actions exist: each `action:` in it is one of
    the integration's, a media player action or another domain's documented one."""
    assert section("Examples"), "no Examples section"
    text = docs().split("### Examples", 1)[1].split("\n### ", 1)[0]
    assert text.count("```yaml") >= 3, "fewer than three examples"
    ours = set(re.findall(r"^([a-z_]+):", (INTEGRATION / "services.yaml").read_text(), re.M))
    for action in re.findall(r"action: ([a-z_]+)\.([a-z_]+)", text):
        if action[0] == "cast2mqtt":
            assert action[1] in ours, f"the example uses cast2mqtt.{action[1]}, which services.yaml lacks"


DONE_CHECKS: dict[str, Callable[[], None]] = {
    "action-setup": check_action_setup,
    "brands": check_brands,
    "config-entry-unloading": check_config_entry_unloading,
    "config-flow": check_config_flow,
    "config-flow-test-coverage": check_config_flow_test_coverage,
    "dependency-transparency": check_dependency_transparency,
    "devices": check_devices,
    "diagnostics": check_diagnostics,
    "discovery": check_discovery,
    "docs-actions": lambda: None if section("Actions") else pytest.fail("no Actions section"),
    "docs-configuration-parameters": check_docs_configuration_parameters,
    "docs-installation-instructions": lambda: None if section("Installing") else pytest.fail("no Installing section"),
    "docs-removal-instructions": lambda: None if section("Removal") else pytest.fail("no Removal section"),
    "docs-troubleshooting": lambda: None if section("Troubleshooting") else pytest.fail("no Troubleshooting section"),
    "docs-examples": check_docs_examples,
    "docs-known-limitations": lambda: None if section("Known limitations") else pytest.fail("no Known limitations section"),
    "docs-use-cases": lambda: None if section("Use cases") else pytest.fail("no Use cases section"),
    "dynamic-devices": check_dynamic_devices,
    "entity-device-class": check_entity_device_class,
    "entity-unique-id": check_entity_unique_id,
    "exception-translations": check_exception_translations,
    "has-entity-name": check_has_entity_name,
    "icon-translations": check_icon_translations,
    "inject-websession": check_inject_websession,
    "integration-owner": check_integration_owner,
    "parallel-updates": check_parallel_updates,
    "reconfiguration-flow": check_reconfiguration_flow,
    "repair-issues": check_repair_issues,
    "runtime-data": check_runtime_data,
    "stale-devices": check_stale_devices,
    "strict-typing": check_strict_typing,
    "test-before-setup": check_test_before_setup,
    "test-coverage": check_test_coverage,
}


def test_every_rule_is_listed_once_with_a_state_and_its_reason() -> None:
    text = (INTEGRATION / "quality_scale.yaml").read_text()
    listed = re.findall(r"^  ([a-z-]+):", text, re.M)
    assert sorted(listed) == sorted(ALL_RULES), set(listed) ^ set(ALL_RULES)
    assert len(listed) == len(set(listed)), "a rule listed twice"
    for rule, value in rules().items():
        assert value["status"] in ("done", "exempt", "todo"), rule
        if value["status"] != "done":
            assert len(value.get("comment", "").strip()) >= 10, f"{rule}: {value['status']} needs a reason"


@pytest.mark.parametrize("rule", sorted(DONE_CHECKS))
def test_a_rule_marked_done_is_what_the_code_does(rule: str) -> None:
    if rules()[rule]["status"] == "done":
        DONE_CHECKS[rule]()


def test_exempt_rules_have_nothing_they_would_apply_to() -> None:
    states = {rule: value["status"] for rule, value in rules().items()}
    everything = all_code()
    if states["appropriate-polling"] == "exempt":
        assert manifest()["iot_class"].endswith("_push") and "SCAN_INTERVAL" not in everything
    if states["reauthentication-flow"] == "exempt":
        assert "async_step_reauth" not in code("config_flow.py")
    if states["docs-configuration-parameters"] == "exempt":
        assert not has_options_flow(), "there is an options flow: its parameters must be documented"
    if states["async-dependency"] == "exempt":
        assert manifest()["requirements"] == []
    # The media player is the only entity platform: what only other entities need is exempt.
    platforms = re.findall(r"Platform\.([A-Z_]+)", code("__init__.py"))
    for rule in ("entity-category", "entity-disabled-by-default", "entity-translations"):
        if states[rule] == "exempt":
            assert set(platforms) == {"MEDIA_PLAYER"}, f"{rule}: there are other entities now"
            assert "_attr_name = None" in code("media_player.py")


def test_todo_rules_are_not_done_in_hiding() -> None:
    """A todo whose evidence exists should be marked done (the check fails once it is)."""
    states = {rule: value["status"] for rule, value in rules().items()}
    for rule, check in DONE_CHECKS.items():
        if states[rule] != "todo":
            continue
        try:
            check()
        except AssertionError:
            continue
        pytest.fail(f"{rule} is marked todo but its check passes: mark it done")
