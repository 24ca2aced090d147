"""Kernel filters that every invocation passes, whichever door it came through."""

from kernel_setup.filters.arguments import validate_arguments

__all__ = ["validate_arguments"]
