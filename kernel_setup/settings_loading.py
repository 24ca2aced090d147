"""Loading the settings: `appsettings.json` plus `PUMPOPS_<Section>__<Key>` environment overrides, validated.

Lookup order for the settings file: an explicit path (``--settings``), then the ``PUMPOPS_SETTINGS``
environment variable, then ``./appsettings.json``, then the defaults built into the `kernel_setup.settings` models.
Relative paths inside a settings file resolve against that file's folder; with no file they
resolve against the current directory.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from core.errors import sentence
from kernel_setup.errors import SettingsError
from kernel_setup.settings import Settings
from storage.urls import mask_url

ENV_PREFIX = "PUMPOPS_"
SETTINGS_ENV_VAR = "PUMPOPS_SETTINGS"
DEFAULT_FILE_NAME = "appsettings.json"
MAX_JSON_DEPTH = 32
"""Deepest nesting of objects and arrays accepted in a settings file or an environment value (the settings
themselves need 4: Approval, Policy, plugin, function). Deeper JSON is refused before parsing, which
would otherwise end in a RecursionError."""

# What the depth scan looks at: an escape (so an escaped quote does not end a string), a quote, a bracket.
_JSON_TOKEN = re.compile(r'\\.|["\[\]{}]', re.DOTALL)


def find_settings_file(explicit: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path | None:
    """Return the settings file by the lookup order, or None when the built-in defaults apply."""
    if explicit is not None:
        path = Path(explicit)
        if not path.is_file():
            raise SettingsError(f"Settings file {str(path)!r} (from --settings) does not exist.")
        return path
    from_env = env.get(SETTINGS_ENV_VAR)
    if from_env:
        path = Path(from_env)
        if not path.is_file():
            raise SettingsError(f"Settings file {from_env!r} (from {SETTINGS_ENV_VAR}) does not exist.")
        return path
    local = Path.cwd() / DEFAULT_FILE_NAME
    return local if local.is_file() else None


def load_settings(path: str | os.PathLike[str] | None = None, *, env: Mapping[str, str] | None = None) -> Settings:
    """Load settings by the lookup order, apply environment overrides and validate them.

    Raises:
        SettingsError: an unreadable file, an unknown key or a bad value, with a message naming the
            key and what is allowed.
    """
    env = os.environ if env is None else env
    file = find_settings_file(path, env)
    data: dict[str, Any] = {}
    if file is not None:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SettingsError(f"Cannot read settings file {str(file)!r}: {sentence(str(exc))}") from exc
        _check_depth(text, f"Settings file {str(file)!r}")
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SettingsError(
                f"Settings file {str(file)!r} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}."
            ) from exc
        if not isinstance(loaded, dict):
            raise SettingsError(f"Settings file {str(file)!r} must hold a JSON object of sections.")
        data = loaded
    data = _apply_env_overrides(data, env)
    base_dir = file.resolve().parent if file is not None else Path.cwd()
    source = str(file) if file is not None else "built-in defaults"
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise SettingsError(_describe_validation_error(exc, source)) from exc
    settings._base_dir = base_dir
    settings._source = source
    return settings


def _section_fields() -> dict[str, tuple[str, type[BaseModel]]]:
    """Map lower-cased section aliases to (alias, model)."""
    out: dict[str, tuple[str, type[BaseModel]]] = {}
    for name, field in Settings.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            alias = field.alias or name
            out[alias.lower()] = (alias, annotation)
    return out


def _apply_env_overrides(data: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """Merge `PUMPOPS_<Section>__<Key>[__<Sub>...]` variables into the file's data (case-insensitive)."""
    sections = _section_fields()
    merged: dict[str, Any] = json.loads(json.dumps(data))
    for var, raw in sorted(env.items()):
        if not var.upper().startswith(ENV_PREFIX) or var.upper() == SETTINGS_ENV_VAR:
            continue
        parts = var[len(ENV_PREFIX) :].split("__")
        if len(parts) < 2 or not all(parts):
            raise SettingsError(
                f"Environment variable {var!r} is not of the form {ENV_PREFIX}<Section>__<Key>, "
                f"e.g. {ENV_PREFIX}Ollama__Host. Sections: {', '.join(a for a, _ in sections.values())}."
            )
        section = sections.get(parts[0].lower())
        if section is None:
            raise SettingsError(
                f"Environment variable {var!r} names unknown section {parts[0]!r}. "
                f"Sections: {', '.join(a for a, _ in sections.values())}."
            )
        alias, model = section
        key_aliases = {(f.alias or n).lower(): (f.alias or n) for n, f in model.model_fields.items()}
        key = key_aliases.get(parts[1].lower())
        if key is None:
            raise SettingsError(
                f"Environment variable {var!r} names unknown key {parts[1]!r} in section {alias!r}. "
                f"Keys: {', '.join(key_aliases.values())}."
            )
        existing_section = next((k for k in merged if k.lower() == alias.lower()), alias)
        target = merged.setdefault(existing_section, {})
        if not isinstance(target, dict):
            raise SettingsError(f"Section {alias!r} in the settings file must be a JSON object.")
        existing_key = next((k for k in target if k.lower() == key.lower()), key)
        node = target
        path = [existing_key, *parts[2:]]
        for step in path[:-1]:
            node = node.setdefault(step, {})
            if not isinstance(node, dict):
                raise SettingsError(f"Cannot override {var!r}: {step!r} is not an object.")
        node[path[-1]] = _parse_env_value(var, raw)
    return merged


def _parse_env_value(var: str, raw: str) -> Any:
    """Environment values are JSON when they parse as JSON (numbers, booleans, objects), else text."""
    _check_depth(raw, f"Environment variable {var!r}")
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def _check_depth(text: str, what: str) -> None:
    """Refuse JSON nested deeper than `MAX_JSON_DEPTH`, naming where it goes too deep (one line).

    Raises:
        SettingsError: ``text`` opens more than `MAX_JSON_DEPTH` objects or arrays inside one another.
    """
    depth = 0
    in_string = False
    for token in _JSON_TOKEN.finditer(text):  # linear: every token is one or two characters
        mark = token.group()
        if mark == '"':
            in_string = not in_string
        elif in_string or mark.startswith("\\"):
            continue  # brackets inside strings do not nest anything
        elif mark in ("[", "{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                at = token.start()
                line = text.count("\n", 0, at) + 1
                column = at - text.rfind("\n", 0, at)
                raise SettingsError(
                    f"{what} nests JSON deeper than {MAX_JSON_DEPTH} levels (line {line}, column {column}). "
                    'Settings need at most 4, e.g. {"Approval": {"Policy": {"work_orders": '
                    '{"create_work_order": "deny"}}}}.'
                )
        else:
            depth -= 1


def _describe_validation_error(exc: ValidationError, source: str) -> str:
    lines = [f"Invalid settings (from {source}; environment overrides applied):"]
    for error in exc.errors():
        key = ".".join(str(part) for part in error["loc"])
        if error["type"] == "extra_forbidden":
            parent = error["loc"][:-1]
            allowed = _allowed_keys(parent)
            lines.append(f"  - {key}: unknown key. Allowed here: {', '.join(allowed)}.")
        else:
            value = error.get("input")
            shown = "" if isinstance(value, dict) else f" (got {_shown(str(error['loc'][-1]), value)})"
            lines.append(f"  - {key}: {error['msg']}{shown}.")
    return "\n".join(lines)


_SECRET_KEYS = frozenset({"Password", "ApiKey", "Token", "Secret"})


def _shown(key: str, value: object) -> str:
    """A refused value as an error may echo it: never a secret, and a URL without its password."""
    if key in _SECRET_KEYS:
        return "a value, not shown"
    if isinstance(value, str) and "://" in value:
        return repr(mask_url(value))
    return repr(value)


def _allowed_keys(parent: tuple[int | str, ...]) -> list[str]:
    model: type[BaseModel] = Settings
    for part in parent:
        field = next((f for n, f in model.model_fields.items() if (f.alias or n) == part), None)
        if field is None or not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)):
            return []
        model = field.annotation
    return [f.alias or n for n, f in model.model_fields.items()]
