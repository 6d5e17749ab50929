"""The worker signs the runs its workflows start and refuses activities of runs the owner did not
sign (ADR 0004). It reads both task and plan inputs, so it sits above both packages."""
