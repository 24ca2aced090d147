"""Who asks at a local door (CLI, chat, MCP over stdio): the OS user running the process, proven by the OS.

The name comes from the password database for the effective user id, never from ``getpass`` or
``USER``/``LOGNAME``, which a caller can set. A name typed with ``--as`` (or ``--by``) is accepted only
when ``Identity.AllowAssertedNames`` is true, and then only as a label recorded beside the OS user
(the audit row shows "root (asserted: alice)"); it never changes the principal or its roles.
Automation (automatic triage, the telemetry service) acts as itself with proof ``service``.
"""

from __future__ import annotations

import os
import pwd

from governance.errors import PrincipalError
from governance.identity import CallContext
from governance.principals import principal_name, same_principal
from governance.roles import Proof, roles_for
from kernel_setup.settings import Settings


def os_user() -> str:
    """The login name of the effective user running this process (``uid:N`` when it has no passwd entry)."""
    uid = os.geteuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:  # a container user without an /etc/passwd entry
        return f"uid:{uid}"


def local_caller(
    settings: Settings,
    door: str,
    *,
    asserted: str | None = None,
    option: str = "--as",
    session: str | None = None,
) -> CallContext:
    """The caller of a local door: the OS user with its roles, and ``asserted`` as a label when allowed.

    ``asserted`` naming the OS user itself is no label and always accepted; ``option`` is how it was
    given (``--as``, ``--by``, an MCP client's name), for the error message.

    Raises:
        PrincipalError: ``asserted`` is not a valid name, or names someone else while
            ``Identity.AllowAssertedNames`` is false (the message says how to enable it).
    """
    user = os_user()
    identity = settings.identity
    label: str | None = None
    if asserted is not None:
        name = principal_name(asserted, option=option)
        if not same_principal(name, user):
            if not identity.allow_asserted_names:
                raise PrincipalError(
                    f"{option} {name!r} is refused: a local door acts as the OS user running it ({user}), and typed "
                    f"names are off. Leave out {option}, or set Identity.AllowAssertedNames to true in "
                    "appsettings.json (or PUMPOPS_Identity__AllowAssertedNames=true) to record the name as an "
                    f"asserted label beside {user}; a label never grants a role or changes who decides."
                )
            label = name
    return CallContext(
        principal=user,
        session=session,
        door=door,
        proof=Proof.OS_USER,
        roles=roles_for(user, identity.roles, identity.default_roles),
        label=label,
    )


def service_caller(name: str, door: str, *, session: str | None = None) -> CallContext:
    """PumpOps acting on its own (automatic triage, the telemetry service): no person, so no role counts."""
    return CallContext(principal=name, session=session, door=door, proof=Proof.SERVICE)
