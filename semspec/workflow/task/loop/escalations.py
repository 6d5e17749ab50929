"""The task's questions to a human: at most one pending, answered by ``resolve_escalation``.

Plain state over ``TaskStatus``: the workflow opens a question, publishes it and waits until it
is ``answered``, then closes it; the update handler and its validator call ``answer`` and
``check``. No Temporal here.

Only the stack's owner answers (ADR 0004): ``check`` refuses an answer whose signature does not
verify against the task's owner key for the pending question's id and nonce.
"""

from __future__ import annotations

from dataclasses import dataclass

from semspec.core.owner_key import verify
from semspec.vocabulary.resolution_actions import answer_problem
from semspec.workflow.task.messages import (
    RESOLVE,
    Escalation,
    EscalationSource,
    Phase,
    Resolution,
    ResolutionAck,
    TaskStatus,
)


class UnsignedAnswer(ValueError):
    """An answer without the owner's valid signature for the pending question."""


@dataclass
class Escalations:
    """The pending question of one task, and the answer it got."""

    status: TaskStatus
    resolution: Resolution | None = None
    resumes_in: Phase = "starting"
    """The phase the task goes back to once answered."""
    owner_key: str = ""
    """The public key answers must be signed with."""
    signed: bool = True
    """Whether answers must be signed: the workflow always checks; False only where a test
    checks an answer's content alone."""

    def open(
        self,
        number: int,
        reason: str,
        message: str,
        fingerprint: str | None,
        source: EscalationSource,
        nonce: str = "",
    ) -> Escalation:
        """Ask question ``number`` of the task; the status shows it as pending."""
        status = self.status
        escalation = Escalation(
            escalation_id=f"{status.task_id}-{number}",
            task_id=status.task_id,
            reason=reason,
            message=message,
            iteration=status.iteration,
            retries=status.retries,
            fingerprint=fingerprint,
            source=source,
            nonce=nonce,
        )
        # Cleared before the escalation is visible: an answer may arrive while it is published.
        self.resolution = None
        status.pending_escalation = escalation
        self.resumes_in, status.phase = status.phase, "escalated"
        status.paused = source == "pause"
        status.halted = source == "halt"
        return escalation

    def check(self, resolution: Resolution) -> None:
        """Refuse an answer (``ValueError``) when nothing waits for one, the owner did not sign
        it for the pending question (``UnsignedAnswer``), or it lacks what it needs.

        An unknown action never gets here: ``Resolution.action`` is a Literal, so decoding the
        update's argument rejects it.
        """
        pending = self.status.pending_escalation
        if pending is None or self.resolution is not None:
            raise ValueError(f"task {self.status.task_id} is not waiting on an escalation")
        if self.signed and not verify(
            self.owner_key, resolution.signature, RESOLVE, resolution.signed_fields(pending)
        ):
            how = "wrongly signed" if resolution.signature else "unsigned"
            raise UnsignedAnswer(
                f"{how} answer to {pending.escalation_id} refused: only the stack's owner may "
                "answer (`semspec escalations resolve` signs with the owner key)"
            )
        r = resolution
        if problem := answer_problem(r.action, r.guidance, r.extra_retries, r.extra_usd):
            raise ValueError(problem.message)

    def answer(self, resolution: Resolution) -> ResolutionAck:
        """Take a checked answer to the pending question."""
        pending = self.status.pending_escalation
        assert pending is not None
        self.resolution = resolution
        return ResolutionAck(pending.escalation_id, resolution.action)

    @property
    def answered(self) -> bool:
        """Whether the pending question has its answer."""
        return self.resolution is not None

    def close(self) -> Resolution:
        """The answer; the task resumes its phase with a fresh retry count."""
        resolution, status = self.resolution, self.status
        assert resolution is not None
        self.resolution = None
        status.pending_escalation = None
        status.retries = 0
        status.paused = status.halted = False
        status.phase = self.resumes_in
        return resolution
