"""What an audit row keeps of a call's arguments."""

import json

from governance.audit_values import MAX_STRING_CHARS, sanitize_arguments
from governance.effects import Effect


def test_arguments_are_stored_as_sorted_json_with_strings_capped_and_secrets_redacted() -> None:
    text = sanitize_arguments(
        {"zeta": "x" * 2_000, "alpha": Effect.WRITE, "api_key": "hunter2", "nested": {"b": [1.5, float("nan")]}}
    )
    data = json.loads(text)
    assert list(data) == ["alpha", "api_key", "nested", "zeta"]
    assert data["alpha"] == "write" and data["api_key"] == "[redacted]" and "hunter2" not in text
    assert data["nested"] == {"b": [1.5, "nan"]}
    assert data["zeta"].startswith("x" * MAX_STRING_CHARS) and data["zeta"].endswith("[+1500 chars]")
