"""Role checks at the doors: who may decide approvals and who may read the audit trail.

A role counts only for a proven principal (`CallContext.has`). A refusal names the principal, the
role it lacks and how to grant it, so the person refused knows whom to ask and what to change.
"""

from __future__ import annotations

from governance.errors import RoleError
from governance.identity import CallContext
from governance.roles import Role

GRANT_HINT = (
    "An administrator grants roles in the settings file under Identity.Roles, e.g. "
    '"Identity": {{"Roles": {{"{name}": ["{role}"]}}}}; over HTTP, with a token created by '
    "`pumpops tokens create NAME --role {role}`."
)


def require_role(call: CallContext, doing: str, *roles: Role) -> None:
    """Refuse unless ``call``'s proven principal holds one of ``roles``; ``doing`` says what was attempted.

    Raises:
        RoleError: the principal is not proven, or holds none of ``roles``.
    """
    if any(call.has(role) for role in roles):
        return
    wanted = " or ".join(role.value for role in roles)
    if not call.proof.proven:
        raise RoleError(
            f"{call.audit_name} cannot {doing}: it needs the {wanted} role, and roles count only for a principal "
            f"proven by the OS user running a local door or by a token (this one's proof: {call.proof.value})."
        )
    raise RoleError(
        f"{call.audit_name} cannot {doing}: it needs the {wanted} role and holds "
        f"{', '.join(sorted(r.value for r in call.roles)) or 'none'}. "
        + GRANT_HINT.format(name=call.principal, role=roles[0].value)
    )
