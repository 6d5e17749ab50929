"""semspec: durable orchestration of LLM coding agents."""

__version__ = "0.1.0"
