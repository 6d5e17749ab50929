"""The plan workflow: a set of tasks run as child ``TaskWorkflow``s in dependency order."""
