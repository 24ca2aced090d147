"""The `pumpops` command line."""
