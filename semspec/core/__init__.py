"""The ground floor: errors and reason codes, logging, configuration, the run folder (ADR 0003)."""
