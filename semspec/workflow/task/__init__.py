"""The task loop: developer → gates → reviewer as one durable Temporal workflow."""
