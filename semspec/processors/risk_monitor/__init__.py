"""The risk monitor: a JetStream processor that turns loop events into graduated user signals.

``rules`` is the pure core; ``processor`` runs it over a durable consumer with state in KV;
``runner`` wires it to the services for ``semspec monitor``.
"""
