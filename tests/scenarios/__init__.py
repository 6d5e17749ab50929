"""Scenario tests: whole user paths through the CLI on the embedded stack."""
