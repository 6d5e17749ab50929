"""Temporal workflows and activities: the task loop, plans, gates, git, fingerprints."""
