"""Long-running NATS processors: the risk monitor and its Temporal adapters."""
