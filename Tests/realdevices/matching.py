"""Expected-subset matching of published JSON, with a readable list of differences.

An expected value matches an actual one when:

- a dict: every expected key is there and matches (other keys are allowed); `{"$absent": true}`
  as a key's value means the key must not be there;
- a list: same length, element by element;
- a number: within 1e-6 (a float32 level printed as a double, 0.44999998807907104, matches 0.45);
  `true`/`false` never match numbers;
- anything else: equal.

Operators (a dict with one `$` key):
`{"$exact": {...}}` the keys are exactly these (`updated_at`, `position_updated_at` aside);
`{"$null_or": X}` null or matching X; `{"$unordered": [...]}` the same elements in any order;
`{"$contains": "text"}` a string containing text; `{"$approx": [value, tolerance]}`;
`{"$any": true}` any value (the key must be there); `{"$not_null": true}`;
`{"$some": X}` a list with at least one element matching X; `{"$none": X}` a list with none;
`{"$len": N}`; `{"$all": [X, Y]}` matching each.
"""

from __future__ import annotations

import json
from typing import Any

IGNORED_IN_EXACT = {"updated_at", "position_updated_at"}


def differences(expected: Any, actual: Any, path: str = "") -> list[str]:
    where = path or "(document)"
    if isinstance(expected, dict) and len(expected) == 1 and next(iter(expected)).startswith("$"):
        return _operator(next(iter(expected)), next(iter(expected.values())), actual, where, path)
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {_show(actual)}"]
        found: list[str] = []
        for key, value in expected.items():
            child = f"{path}.{key}" if path else key
            if value == {"$absent": True}:
                if key in actual:
                    found.append(f"{child}: expected absent, got {_show(actual[key])}")
            elif key not in actual:
                found.append(f"{child}: missing (expected {_show(value)})")
            else:
                found += differences(value, actual[key], child)
        return found
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{where}: expected a list, got {_show(actual)}"]
        if len(expected) != len(actual):
            return [f"{where}: expected {len(expected)} elements {_show(expected)}, got {len(actual)} {_show(actual)}"]
        found = []
        for index, (e, a) in enumerate(zip(expected, actual)):
            found += differences(e, a, f"{path}[{index}]")
        return found
    if _number(expected) and _number(actual):
        return [] if abs(float(expected) - float(actual)) <= 1e-6 else [f"{where}: expected {_show(expected)}, got {_show(actual)}"]
    if type(expected) is not type(actual) or expected != actual:
        return [f"{where}: expected {_show(expected)}, got {_show(actual)}"]
    return []


def matches(expected: Any, actual: Any) -> bool:
    return not differences(expected, actual)


def _operator(op: str, arg: Any, actual: Any, where: str, path: str) -> list[str]:
    if op == "$exact":
        if not isinstance(actual, dict):
            return [f"{where}: expected exactly {_show(arg)}, got {_show(actual)}"]
        extra = sorted(set(actual) - set(arg) - IGNORED_IN_EXACT)
        found = [f"{where}: unexpected keys {extra} (expected exactly {_show(arg)})"] if extra else []
        return found + differences(arg, actual, path)
    if op == "$null_or":
        return [] if actual is None else differences(arg, actual, path)
    if op == "$unordered":
        if not isinstance(actual, list) or len(actual) != len(arg):
            return [f"{where}: expected {_show(arg)} in any order, got {_show(actual)}"]
        left = list(actual)
        for e in arg:
            hit = next((i for i, a in enumerate(left) if matches(e, a)), None)
            if hit is None:
                return [f"{where}: expected {_show(arg)} in any order, got {_show(actual)}"]
            left.pop(hit)
        return []
    if op == "$contains":
        ok = isinstance(actual, str) and str(arg).lower() in actual.lower()
        return [] if ok else [f"{where}: expected a text containing {_show(arg)}, got {_show(actual)}"]
    if op == "$approx":
        value, tolerance = arg
        ok = _number(actual) and abs(float(actual) - value) <= tolerance
        return [] if ok else [f"{where}: expected {value} ± {tolerance}, got {_show(actual)}"]
    if op == "$any":
        return []
    if op == "$absent":
        return [f"{where}: expected absent, got {_show(actual)}"]
    if op == "$not_null":
        return [] if actual is not None else [f"{where}: expected a value, got null"]
    if op == "$some":
        ok = isinstance(actual, list) and any(matches(arg, a) for a in actual)
        return [] if ok else [f"{where}: expected an element matching {_show(arg)}, got {_show(actual)}"]
    if op == "$none":
        ok = isinstance(actual, list) and not any(matches(arg, a) for a in actual)
        return [] if ok else [f"{where}: expected no element matching {_show(arg)}, got {_show(actual)}"]
    if op == "$len":
        ok = isinstance(actual, (list, dict, str)) and len(actual) == arg
        return [] if ok else [f"{where}: expected {arg} elements, got {_show(actual)}"]
    if op == "$all":
        return [d for part in arg for d in differences(part, actual, path)]
    raise AssertionError(f"unknown operator {op} at {where}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 400 else text[:400] + "…"
