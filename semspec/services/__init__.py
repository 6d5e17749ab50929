"""The embedded service stack: NATS, Temporal, the worker and the risk monitor."""
