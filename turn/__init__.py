"""The agent turn: the runner, its events, sessions, and the factory that builds a runner for an app."""
