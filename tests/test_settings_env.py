"""Every environment name a deployment sets today still sets the same setting, with the same type,
default and bounds (tests/fixtures/settings_env.json: the settings as they stood when Settings was split
into sections, as main had them at the merge). A setting added later is free; one renamed, retyped or
with a new default fails here."""

from __future__ import annotations

import json

import pytest
from pydantic import AliasChoices

from backend import PROJECT_ROOT
from backend.config import Settings

RECORDED = json.loads((PROJECT_ROOT / "tests/fixtures/settings_env.json").read_text(encoding="utf-8"))


def _env_names(name: str) -> list[str]:
    alias = Settings.model_fields[name].validation_alias
    if isinstance(alias, AliasChoices):
        return [str(choice).upper() for choice in alias.choices]
    return [alias.upper()] if isinstance(alias, str) else [name.upper()]


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_the_setting_reads_the_same_environment_name_and_keeps_its_type_and_default(name):
    assert name in Settings.model_fields
    field = Settings.model_fields[name]
    now = {
        "env": _env_names(name),
        "default": repr(field.get_default(call_default_factory=True)),
        "type": repr(field.annotation),
        "constraints": [repr(m) for m in field.metadata],
    }
    assert now == RECORDED[name]


def _other_value(name: str) -> tuple[str, object] | None:
    """An environment value other than the default, and what it should read as (plain numbers, flags)."""
    field = Settings.model_fields[name]
    default = field.get_default(call_default_factory=True)
    bounded = any(hasattr(m, "le") or hasattr(m, "lt") for m in field.metadata)
    if field.annotation is bool:
        return str(not default).lower(), not default
    if field.annotation is int and isinstance(default, int) and not bounded:
        return str(default + 1), default + 1
    if field.annotation is float and isinstance(default, float) and not bounded:
        return str(default + 0.5), default + 0.5
    return None


@pytest.mark.parametrize("name", sorted(n for n in RECORDED if _other_value(n) is not None))
def test_setting_the_environment_name_changes_that_setting(monkeypatch, name):
    raw, expected = _other_value(name)  # type: ignore[misc]
    monkeypatch.setenv(RECORDED[name]["env"][0], raw)
    assert getattr(Settings(_env_file=None), name) == expected
