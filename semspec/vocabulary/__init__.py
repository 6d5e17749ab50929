"""Shared names: RDF namespaces and predicates, NATS subjects, reason codes, event envelopes."""
