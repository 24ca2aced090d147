"""The doors into PumpOps: the CLI, the MCP server and alarm triage; each sets who is asking."""
