"""The task loop's deterministic half: what ``TaskWorkflow`` runs inside Temporal's sandbox.

No I/O, no clock, no randomness here (``workflow.now()`` and ``workflow.uuid4()`` only): the
modules are re-imported by the workflow sandbox and replayed from history. The activities
(git, agents, gates, NATS) are the other half, in ``semspec.workflow.task``.
"""
