"""The `Identity` settings section: who holds which role, and whether typed names are accepted as labels."""

from __future__ import annotations

from pydantic import ConfigDict, Field

from governance.roles import Role
from kernel_setup.settings_sections import Section as _Section
from kernel_setup.settings_sections import alias as _alias


class IdentitySettings(_Section):
    """Roles of proven principals (OS users, token names, OAuth subjects) and the asserted-name switch.

    ``Roles`` maps a principal to the roles it holds beyond ``DefaultRoles``, e.g.
    ``{"jsupervisor": ["supervisor"], "audit-team": ["auditor"]}``. Tokens carry their role in the tokens file.
    """

    model_config = ConfigDict(alias_generator=_alias)
    roles: dict[str, tuple[Role, ...]] = Field(default_factory=dict)
    default_roles: tuple[Role, ...] = (Role.OPERATOR,)
    allow_asserted_names: bool = False
    """Whether ``--as NAME`` may label a local door's requests; the OS user stays the principal and the audit
    row records the name as asserted."""
