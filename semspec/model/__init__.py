"""Model registry, context profiles, LLM providers and performance history."""
