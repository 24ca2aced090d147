"""The composition root: settings, the kernel and its wiring, and the doors (CLI, MCP)."""

from kernel_setup.app import AppContext, add_pumpops_plugins, build_kernel, open_app
from kernel_setup.settings import Settings, load_settings

__all__ = ["AppContext", "Settings", "add_pumpops_plugins", "build_kernel", "load_settings", "open_app"]
