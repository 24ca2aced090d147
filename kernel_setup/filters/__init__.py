"""Kernel filters that every invocation passes, whichever door it came through."""

from kernel_setup.filters.arguments import validate_arguments
from kernel_setup.filters.audit import AuditFilter

__all__ = ["AuditFilter", "validate_arguments"]
