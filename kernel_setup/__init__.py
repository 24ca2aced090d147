"""The composition root and the integrator API.

An embedding app needs only this: `open_app` (settings in, an `AppContext` out: database, services, the kernel
with the PumpOps plugins and filters), `add_pumpops_plugins` (the same plugins and filters on a kernel of the
app's own), and `acting_as` with a `CallContext` (who is asking, for the audit trail and the approval rules).
"""

from governance.identity import CallContext, acting_as
from kernel_setup.app import AppContext, add_pumpops_plugins, build_kernel, open_app
from kernel_setup.settings import Settings
from kernel_setup.settings_loading import load_settings

__all__ = [
    "AppContext",
    "CallContext",
    "Settings",
    "acting_as",
    "add_pumpops_plugins",
    "build_kernel",
    "load_settings",
    "open_app",
]
