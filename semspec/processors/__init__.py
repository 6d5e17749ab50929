"""Long-running NATS processors: the risk monitor, the signal bridge, source ingestion."""
