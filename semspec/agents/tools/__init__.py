"""The developer agent's tools (search, read, list_dir, write_file, apply_patch, ...)."""

from semspec.agents.tools.toolbox import DeveloperToolbox, ToolResult

__all__ = ["DeveloperToolbox", "ToolResult"]
