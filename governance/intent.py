"""Canonical arguments and the keys derived from them (never from a model's call id)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def canonical_json(arguments: Mapping[str, Any]) -> str:
    """Arguments as sorted, compact JSON: the exact form that is hashed and stored."""
    return json.dumps(dict(arguments), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def args_hash(function: str, arguments: Mapping[str, Any]) -> str:
    """SHA-256 binding a function to its exact canonical arguments."""
    return hashlib.sha256(f"{function}\n{canonical_json(arguments)}".encode()).hexdigest()


def intent_key(principal: str, session: str | None, function: str, arguments: Mapping[str, Any]) -> str:
    """The idempotency key of an intent: who, in which session, wants which call with which arguments."""
    material = f"{principal}\n{session or ''}\n{function}\n{canonical_json(arguments)}"
    return hashlib.sha256(material.encode()).hexdigest()
