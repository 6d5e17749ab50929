"""The pydantic models of ``.semspec/config.yaml``.

Every field has a docstring; ``semspec config show`` prints the effective values and
``semspec config validate`` reports errors by file, line and field path.
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from semspec.core.step_rule_table import STEP_RULES, step_rule

GatePresetName = Literal["python", "go", "node", "rust", "none"]
RiskLevel = Literal["observe", "log", "warn", "pause", "halt", "escalate"]
SandboxMode = Literal["auto", "bwrap", "none"]
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A variable name a shell can export."""
_COMMAND_KEPT_CONTROLS = frozenset("\t\n\r")
"""Control characters a gate command may hold: multi-line commands are normal. Any other (NUL,
which no program can be handed, escape, bell, backspace, C1) cannot be meant and only hides
what the command does when printed."""


def _plain_command(command: str) -> str:
    """``command`` when it holds no control character a shell command cannot mean."""
    for index, char in enumerate(command):
        code = ord(char)
        if (code < 0x20 or 0x7F <= code <= 0x9F) and char not in _COMMAND_KEPT_CONTROLS:
            name = "a NUL byte" if char == "\0" else f"the control character {char!r}"
            raise ValueError(
                f"contains {name} at character {index + 1}; a gate command is plain text: "
                "remove it, or let the shell make it (printf '\\033')"
            )
    return command


class _Section(BaseModel):
    """Base for config sections: unknown keys are errors, docstrings describe fields."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, frozen=True)


class ProjectConfig(_Section):
    name: str = "project"
    """Short name of the project, used in graph IRIs and commit messages."""
    base_branch: str = "main"
    """Branch that task branches start from."""


GateFormat = Literal[
    "ruff-json",
    "mypy",
    "eslint-json",
    "golangci-json",
    "cargo-json",
    "pytest",
    "go-test-json",
    "cargo-test",
]
"""Output formats a gate's findings are read from (``semspec.workflow.gates.parsers``)."""
GateBaseline = Literal["auto", "off"]


class GateCommand(_Section):
    name: str = Field(min_length=1)
    """Gate name shown in results (e.g. ``test``)."""
    command: str = Field(min_length=1)
    """Shell command run in the task's worktree."""
    required: bool = True
    """A failed required gate sends the developer back; a failed optional one only warns."""
    timeout: float = Field(default=600.0, gt=0)
    """Seconds before the gate's whole process group is killed."""
    working_dir: str = "."
    """Directory relative to the worktree root to run the command in."""
    network: bool = False
    """Let the gate reach the network when it runs sandboxed (``gates.sandbox``)."""
    format: GateFormat | None = None
    """How the gate's output is read into findings (file, line, rule, message): ``ruff-json``,
    ``mypy``, ``eslint-json``, ``golangci-json``, ``cargo-json``, ``pytest``, ``go-test-json``,
    ``cargo-test``; unset: the output is shown as it is."""
    baseline: GateBaseline = "auto"
    """With a ``format``: ``auto`` sets aside findings and failing tests already on the task's
    base commit (the gate is run there once and cached); ``off`` counts them all."""

    @field_validator("command")
    @classmethod
    def _command_is_text(cls, command: str) -> str:
        return _plain_command(command)


class GateOverride(_Section):
    command: str | None = None
    """Replacement command for the preset gate of the same name."""
    required: bool | None = None
    """Replacement for the preset gate's ``required``."""
    timeout: float | None = Field(default=None, gt=0)
    """Replacement for the preset gate's ``timeout`` in seconds."""
    working_dir: str | None = None
    """Replacement for the preset gate's ``working_dir``."""
    network: bool | None = None
    """Replacement for the preset gate's ``network``."""
    format: GateFormat | None = None
    """Replacement for the preset gate's ``format`` (a new ``command`` may need a new one)."""
    baseline: GateBaseline | None = None
    """Replacement for the preset gate's ``baseline``."""
    enabled: bool = True
    """Set to false to drop the preset gate entirely."""

    @field_validator("command")
    @classmethod
    def _command_is_text(cls, command: str | None) -> str | None:
        return None if command is None else _plain_command(command)


class GateLimits(_Section):
    """Bounds on every process a gate or command agent starts, so that a fork bomb, a memory
    bomb or a runaway test ends the gate and not the machine (``docs/security.md``). Each is an
    rlimit set in the child before it runs; their ``processes`` and ``memory_bytes`` also go
    to a cgroup of their own where one can be made. The defaults are far above what builds and
    test suites use; 0 turns one off.
    """

    processes: int = Field(default=1024, ge=0)
    """Processes and threads a gate may have at once (a pids cgroup where one can be made;
    ``RLIMIT_NPROC`` above the user's running count otherwise, which root ignores)."""
    memory_bytes: int = Field(default=16 * 1024**3, ge=0)
    """Address space of each process (``RLIMIT_AS``), and the cgroup's ``memory.max`` where a
    cgroup v2 with the memory controller can be made. Reservations count: a JVM, node or an
    ASan build may need more."""
    file_size_bytes: int = Field(default=2 * 1024**3, ge=0)
    """Largest file a gate may write (``RLIMIT_FSIZE``)."""
    cpu_seconds: int = Field(default=7200, ge=0)
    """CPU time of each process, all its threads together (``RLIMIT_CPU``)."""


class GatesConfig(_Section):
    preset: GatePresetName = "none"
    """Gate preset from ``configs/gates/<preset>.yaml``: python, go, node, rust or none."""
    overrides: dict[str, GateOverride] = Field(default_factory=dict)
    """Per-gate changes to the preset, keyed by gate name."""
    additional: list[GateCommand] = Field(default_factory=list)
    """Extra gates run after the preset's, each with ``name``, ``command``, ``required``,
    ``timeout``, ``working_dir``, ``network``, ``format`` (``ruff-json``, ``mypy``,
    ``eslint-json``, ``golangci-json``, ``cargo-json``, ``pytest``, ``go-test-json``,
    ``cargo-test``) and ``baseline`` (``auto`` or ``off``). ``{changed_files}`` (or
    ``{changed_files:*.py}``) in a command stands for the files the change touched, handed to
    the shell as arguments."""
    max_output_bytes: int = Field(default=16_384, gt=0)
    """Bytes of gate output kept inline (head and tail); the full log goes to a file."""
    max_log_bytes: int = Field(default=64 * 1024**2, gt=0)
    """Bytes of a gate's full log file; past them the log ends with a line saying how much
    was cut."""
    limits: GateLimits = Field(default_factory=GateLimits)
    """Process, memory, file-size and CPU-time bounds for gates and command agents."""
    env: list[str] = Field(default_factory=list)
    """Names of environment variables gates get besides the base set (``PATH``, ``HOME``,
    ``LANG``, ``LC_*``, ``TMPDIR``, ``TERM``, ``USER``, …); nothing else of the worker's
    environment reaches a gate."""
    sandbox: SandboxMode = "auto"
    """How gates and the command developer are fenced: ``bwrap`` runs them under bubblewrap
    (worktree and a private ``/tmp`` writable, no network or one without this machine's
    loopback, run folder hidden), ``none`` runs
    them unfenced, ``auto`` uses bubblewrap when it works here and warns once when not.
    Network for agent code (``network: true`` gates, the command developer) also needs
    slirp4netns under ``auto`` and ``bwrap``; only ``none`` runs them without it."""

    @field_validator("env")
    @classmethod
    def _env_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not name or "=" in name or "\0" in name:
                raise ValueError(f"{name!r} is not an environment variable name")
        return names


class LoopConfig(_Section):
    max_retries: int = Field(default=3, ge=0)
    """Developer retries allowed before the task escalates to a human."""
    max_iterations: int = Field(default=12, ge=1)
    """Hard cap on developer iterations across all retries and human answers."""
    developer_timeout_s: float = Field(default=1800.0, gt=0)
    """Start-to-close timeout of one developer activity."""
    reviewer_timeout_s: float = Field(default=600.0, gt=0)
    """Start-to-close timeout of one reviewer activity."""
    activity_attempts: int = Field(default=5, ge=1)
    """Maximum Temporal attempts of an activity before the loop escalates."""
    max_cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """US dollars one task may spend on model calls before it pauses and escalates
    (``budget_exhausted``); unset = no dollar budget. With a budget, a model without a price in
    the registry is not run until a human agrees (``unknown_price``)."""
    keep_worktrees: bool = False
    """Keep each task's worktree after the task ends (approved, aborted, failed, refused or
    cancelled) until it lands; by default it is removed when the task ends, and the task branch
    keeps the work. A task file's ``keep_worktree:`` wins. A task that is escalated, halted or
    waiting has not ended: it keeps its worktree either way."""
    land: Literal["manual", "auto"] = "manual"
    """What happens to approved work: ``manual`` waits for ``semspec task land``; ``auto`` lands
    each task on the base branch as it is approved, through the base branch's queue (a conflict
    or a gate failing on the result escalates ``land_conflict`` / ``land_gate_failed``;
    docs/landing.md). A task or plan file's ``land:`` wins."""


class RiskRule(_Section):
    enabled: bool = True
    """Whether the rule is evaluated."""
    threshold: float = 0
    """Rule-specific threshold (a count or a fraction)."""
    level: RiskLevel = "warn"
    """Level the rule signals at first; repeats climb the ladder from here."""


def _rule(threshold: float, level: RiskLevel) -> RiskRule:
    return RiskRule(threshold=threshold, level=level)


_MIB = 1024 * 1024
_DAY_S = 86_400.0


class StreamLimits(_Section):
    """How much a JetStream stream (or KV bucket) keeps; the oldest data goes first."""

    max_age_s: float = Field(gt=0)
    """Seconds a message (or a KV value not written since) is kept."""
    max_bytes: int = Field(gt=0)
    """Most bytes the stream keeps in all."""
    max_msg_size: int = Field(default=_MIB, gt=0)
    """Largest single message (or KV value) accepted, in bytes."""


def _limits(days: float, mib: int) -> StreamLimits:
    return StreamLimits(max_age_s=days * _DAY_S, max_bytes=mib * _MIB)


class RiskLimits(_Section):
    """Bounds of every stream and bucket semspec creates; existing ones are updated on start."""

    events: StreamLimits = Field(default_factory=lambda: _limits(7, 1024))
    """``AGENT_MONITOR``: the loop events (``agent.monitor.*``)."""
    signals: StreamLimits = Field(default_factory=lambda: _limits(30, 256))
    """``USER_SIGNALS``: the user signals (``user.signal.*``)."""
    dead_letters: StreamLimits = Field(default_factory=lambda: _limits(30, 256))
    """``SEMSPEC_DEADLETTER``: events the monitor could not use."""
    state: StreamLimits = Field(default_factory=lambda: _limits(30, 256))
    """``SEMSPEC_RISK``: the monitor's KV bucket (task states and the file index); a value not
    written for ``max_age_s`` expires."""


class LeaderConfig(_Section):
    lease_ttl_s: float = Field(default=10.0, ge=1)
    """Seconds the active monitor's lease lasts unless renewed (every third of it); a standby
    takes over this long (plus ``poll_s``) after the active monitor died (ADR 0005)."""
    poll_s: float = Field(default=1.0, gt=0)
    """Seconds between a standby monitor's attempts to take the lease."""
    stall_s: float = Field(default=30.0, gt=0)
    """Seconds events may wait with nothing acknowledged before they count as not being
    consumed: ``semspec status`` then fails, and a standby takes the lease from the holder
    (ADR 0005). Keep it above ``lease_ttl_s + poll_s + ack_wait_s``, a normal handover."""


MAX_STEP_WINDOW = 64
"""Largest threshold of a step rule: the monitor keeps at most this many steps per task."""


class StepRule(RiskRule):
    """A step rule: its threshold counts steps (ADR 0006)."""

    threshold: int = 1
    """Steps in a row that make the pattern (a whole number)."""
    level: RiskLevel = "pause"
    """Level the rule signals at first; repeats climb the ladder from here."""


def _step_rule(threshold: int) -> StepRule:
    return StepRule(threshold=threshold)


class _RulesSection(_Section):
    """A section of risk rules, each with its own default threshold and level: a rule given in
    part (``{enabled: false}``, ``{threshold: 5}``) keeps the rest of its default, not the
    generic ``RiskRule`` one."""

    @model_validator(mode="before")
    @classmethod
    def _rules_over_their_defaults(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        merged = dict(data)
        for name, field in cls.model_fields.items():
            given, make_default = data.get(name), field.default_factory
            if isinstance(given, dict) and make_default is not None:
                default = make_default()  # type: ignore[call-arg]
                if isinstance(default, RiskRule):
                    merged[name] = {**default.model_dump(), **given}
        return merged


class _StepRules(_RulesSection):
    """Rules over the steps inside an agent's turn (``agent.monitor.step``); each threshold is a
    count of steps. ADR 0006 says why they pause first. One field per row of
    ``core.step_rule_table.STEP_RULES``, made by ``_step_rules_model``."""

    def rule(self, reason: str) -> StepRule:
        """The settings of the step rule named ``reason`` (a row of ``STEP_RULES``)."""
        found = getattr(self, reason)
        assert isinstance(found, StepRule), reason
        return found

    @field_validator("*")
    @classmethod
    def _threshold_is_a_count(cls, value: Any, info: ValidationInfo) -> Any:
        spec = step_rule(info.field_name or "")
        if spec is None or not isinstance(value, StepRule):
            return value
        count = value.threshold
        if count != int(count) or not spec.least <= count <= MAX_STEP_WINDOW:
            raise ValueError(
                f"threshold must be a whole number of steps from {spec.least} to {MAX_STEP_WINDOW}"
            )
        return value


def _step_rules_model() -> type[_StepRules]:
    """``StepRulesConfig``: a field per step rule of the table, then ``wait_tools``."""
    fields: dict[str, Any] = {
        spec.reason: (
            StepRule,
            Field(default_factory=partial(_step_rule, spec.threshold), description=spec.meaning),
        )
        for spec in STEP_RULES
    }
    fields["wait_tools"] = (
        list[str],
        Field(
            default=[],
            description="Tools that wait on purpose (polling is expected to repeat): the "
            "repetition rules skip their steps, as they skip any step the agent marks ``wait``.",
        ),
    )
    return create_model(
        "StepRulesConfig",
        __base__=_StepRules,
        __module__=__name__,
        __doc__=_StepRules.__doc__,
        **fields,
    )


if TYPE_CHECKING:

    class StepRulesConfig(_StepRules):
        """What type checkers see of the model ``_step_rules_model`` makes."""

        wait_tools: list[str] = []

        def __getattr__(self, reason: str) -> StepRule: ...

else:
    StepRulesConfig = _step_rules_model()


class RiskConfig(_RulesSection):
    retry_count: RiskRule = Field(default_factory=lambda: _rule(3, "escalate"))
    """Retries above ``threshold``, plus any a human granted with ``extend_budget``, escalate."""
    context_utilization: RiskRule = Field(default_factory=lambda: _rule(0.70, "pause"))
    """Context utilization above ``threshold`` (fraction) pauses and checkpoints."""
    scope_creep: RiskRule = Field(default_factory=lambda: _rule(0, "warn"))
    """Files touched outside the task's files flag the task for review."""
    conflicting_changes: RiskRule = Field(default_factory=lambda: _rule(2, "halt"))
    """The same file of one project (repositories with the same root commit) touched by
    ``threshold`` active tasks halts them."""
    repeated_fingerprint: RiskRule = Field(default_factory=lambda: _rule(2, "escalate"))
    """The same evidence fingerprint seen ``threshold`` times escalates."""
    context_exhaustion: RiskRule = Field(default_factory=lambda: _rule(1, "warn"))
    """Warn when tokens per iteration predict running out within ``threshold`` iterations."""
    dedupe_ids: int = Field(default=1_000, ge=1)
    """Event ids remembered per task, so duplicate and redelivered events change nothing."""
    batch_size: int = Field(default=256, ge=1)
    """Most events the monitor evaluates and stores together before acknowledging them."""
    max_ack_pending: int = Field(default=1_000, ge=1)
    """Most events the monitor's consumer holds unacknowledged at once."""
    ack_wait_s: float = Field(default=5.0, gt=0)
    """Seconds before an unacknowledged event is delivered again (e.g. after a crash). Up to
    two thirds of ``leader.lease_ttl_s``, the events a killed monitor held are due again when a
    standby takes over; above, the standby waits for them (ADR 0005)."""
    signal_dedupe_window_s: float = Field(default=3_600.0, gt=0)
    """Seconds JetStream remembers signal ids, so a re-published signal is dropped."""
    protected_paths: RiskRule = Field(default_factory=lambda: _rule(0, "halt"))
    """A change under ``.semspec/`` or a symlink pointing outside the worktree halts the task."""
    max_deliver: int = Field(default=5, ge=1)
    """Deliveries of an event that keeps failing before it goes to the dead letters."""
    max_task_files: int = Field(default=10_000, ge=1)
    """Most files one task may touch; a ``files`` event beyond it is dead-lettered."""
    reconcile_interval_s: float = Field(default=300.0, gt=0)
    """Seconds between checks that each active task's workflow is still open."""
    idle_task_s: float = Field(default=7 * _DAY_S, gt=0)
    """A task with no event for this long leaves the active set (its next event brings it
    back)."""
    limits: RiskLimits = Field(default_factory=RiskLimits)
    """Age and size bounds of the monitor's streams and KV bucket."""
    leader: LeaderConfig = Field(default_factory=LeaderConfig)
    """How several monitors of one stack elect the one that consumes (ADR 0005)."""
    steps: StepRulesConfig = Field(default_factory=lambda: StepRulesConfig())
    """Stuck-agent rules over each step of a developer or reviewer turn (ADR 0006)."""

    @model_validator(mode="after")
    def _dedupe_window_fits(self) -> RiskConfig:
        if self.signal_dedupe_window_s > self.limits.signals.max_age_s:
            raise ValueError("signal_dedupe_window_s must not exceed limits.signals.max_age_s")
        return self


class ReviewerWindow(_Section):
    system_prompt_tokens: int = Field(default=2_000, ge=0)
    """Tokens reserved for the reviewer's system prompt."""
    working_memory_tokens: int = Field(default=6_000, ge=0)
    """Tokens reserved for the reviewer's reasoning."""
    output_tokens: int = Field(default=1_000, ge=0)
    """Tokens reserved for the verdict."""
    safety_margin: float = Field(default=0.15, ge=0, lt=1)
    """Fraction of the window kept free."""


class ContextConfig(_Section):
    safety_margin: float = Field(default=0.20, ge=0, lt=1)
    """Fraction of the window held back in the developer's budget."""
    min_working_memory: int = Field(default=8_000, ge=0)
    """Below this many tokens of working memory a task is too large."""
    max_task_files: int = Field(default=4, ge=1)
    """More task files than this count as too large."""
    max_file_share: float = Field(default=0.40, gt=0, le=1)
    """File tokens above this share of working memory count as too large."""
    reviewer: ReviewerWindow = Field(default_factory=ReviewerWindow)
    """Layout of the reviewer's window."""


class RoleModel(_Section):
    provider: str = "scripted"
    """Provider name: scripted, openai, anthropic or command."""
    model: str = "scripted"
    """Model id of the registry (``semspec models list``); a role whose ``base_url`` points at a
    server you run may name any model that server serves."""
    script: str | None = None
    """For the scripted provider: path of the YAML script (relative to the repository)."""
    base_url: str | None = None
    """API base URL (e.g. ``http://127.0.0.1:11434/v1`` for Ollama); unset = vendor default."""
    api_key_env: str | None = None
    """NAME of the environment variable holding the API key (the key itself never goes here)."""
    command: str | None = None
    """For the command provider: the CLI to run in the worktree, e.g. ``claude -p``; a
    ``{prompt}`` argument is replaced by the prompt, otherwise the prompt goes on stdin."""
    max_steps: int = Field(default=40, ge=1)
    """Model calls per developer iteration before it stops with ``step_limit``."""
    token_budget: int | None = Field(default=None, ge=1)
    """Tokens (prompt + completion) one developer iteration may use; unset = only the window."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature sent to the provider; unset = the provider's default."""
    max_output_tokens: int = Field(default=4_096, ge=1)
    """Largest reply requested per call; also the response reserve of the context budget."""
    context_window: int | None = Field(default=None, ge=1_024)
    """Context window in tokens; unset = from the model registry (the default profile, 128,000,
    for a model it does not hold)."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Seconds one LLM request (or one run of the command provider) may take."""
    read_gate: Literal["enforce", "advise", "off"] = "enforce"
    """Search-before-read gate of the read tool: enforce blocks, advise only warns."""
    env_pass: list[str] = Field(default_factory=list)
    """For the command provider: names of the worker's environment variables the CLI gets
    besides the base set and ``api_key_env`` (e.g. ``ANTHROPIC_BASE_URL``); one that is unset
    when the developer starts fails the task with its name."""
    env_set: dict[str, SecretStr] = Field(default_factory=dict)
    """For the command provider: variables set to fixed values for the CLI (e.g.
    ``MSWEA_CONFIGURED: "true"``); ``config show`` masks the values."""

    @field_validator("env_pass", "env_set")
    @classmethod
    def _role_env_names(cls, names: Any) -> Any:
        for name in names:
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable name")
        return names


class ModelsConfig(_Section):
    developer: RoleModel = Field(default_factory=RoleModel)
    """Model used for the developer role."""
    reviewer: RoleModel = Field(default_factory=RoleModel)
    """Model used for the reviewer role."""


NATS_SCHEMES = ("nats", "tls", "ws", "wss")
"""URL schemes a NATS client speaks (websocket and plain ones cannot be mixed in one list)."""


def nats_servers(url: str | list[str]) -> list[str]:
    """The server URLs of a ``services.nats.url``: a list, or a string of comma-separated ones."""
    found = url.split(",") if isinstance(url, str) else url
    return [one.strip() for one in found if one.strip()]


def _nats_url_problem(url: str) -> str | None:
    """What is wrong with one NATS server URL, or None."""
    parsed = urlsplit(url)
    if parsed.scheme not in NATS_SCHEMES:
        return f"{url!r}: the scheme must be one of {', '.join(NATS_SCHEMES)}"
    if not parsed.hostname:
        return f"{url!r} names no host"
    try:
        port = parsed.port
    except ValueError:
        port = 0
    # ``urlsplit`` reads ``host:`` (a port left out by mistake) as no port at all.
    if port == 0 or parsed.netloc.endswith(":"):
        return f"{url!r}: the port must be a number from 1 to 65535"
    if parsed.path not in ("", "/") or parsed.query or parsed.fragment:
        return f"{url!r}: a server URL is scheme://host:port, with no path or query"
    return None


def _bad_nats_urls(url: str | list[str]) -> None:
    """Raise what is wrong with every bad server of ``url``: at each bad entry of a list (so
    ``config validate`` names its line), all in one message for a comma-separated string."""
    if isinstance(url, str):
        found = [_nats_url_problem(one) for one in nats_servers(url)]
        if any(found):
            raise ValueError("; ".join(problem for problem in found if problem))
        return
    entries = [
        InitErrorDetails(
            type=PydanticCustomError("value_error", "{problem}", {"problem": problem}),
            loc=(index,),
            input=one,
        )
        for index, one in enumerate(url)
        if one.strip() and (problem := _nats_url_problem(one.strip()))
    ]
    if entries:
        raise ValidationError.from_exception_data("url", entries)


class NatsConfig(_Section):
    url: str | list[str] | None = None
    """External NATS server URL(s), ``nats://host:4222``: one, a list (the nodes of a cluster),
    or a comma-separated string of them. Schemes nats, tls, ws, wss. Unset means the embedded
    server."""
    replicas: int = Field(default=1, ge=1, le=5)
    """Replicas of every stream, KV bucket and consumer semspec creates (existing ones are set to
    it on ``semspec up``). More than 1 needs an external cluster (``url``); 3 is the usual
    choice there: any one node may fail without losing data or writes."""
    port: int = Field(default=4222, ge=0, le=65535)
    """Preferred port of the embedded server (a free one is chosen if taken; 0 = any free port)."""
    monitor_port: int | None = Field(default=None, ge=0, le=65535)
    """HTTP monitoring port of the embedded server (0 = any free port). Unset (the default):
    no monitoring, since it shows clients, streams and subjects to any local user
    (docs/security.md)."""
    token: SecretStr | None = None
    """Auth token for an external server."""
    user: str | None = None
    """User name for an external server."""
    password: SecretStr | None = None
    """Password for ``user``."""
    creds_file: str | None = None
    """Path of a NATS credentials file."""
    auth_file: str | None = None
    """Path (relative to the repository) of a JSON file with ``user`` and ``password``: another
    repository's ``.semspec/run/nats.auth.json`` when this one joins that repository's stack."""

    @field_validator("url", mode="before")
    @classmethod
    def _one_url_or_a_list(cls, url: Any) -> Any:
        # Before the union: its own errors would name each member (``url.str``, ``url.list[str]``)
        # rather than the field a user wrote.
        if url is None or isinstance(url, str):
            return url
        if isinstance(url, list) and all(isinstance(one, str) for one in url):
            return url
        raise PydanticCustomError("string_or_list_type", "Input should be a URL or a list of URLs")

    @field_validator("url")
    @classmethod
    def _server_urls(cls, url: str | list[str] | None) -> str | list[str] | None:
        if url is None:
            return None
        servers = nats_servers(url)
        if not servers:
            raise ValueError("names no server; leave it unset for the embedded server")
        _bad_nats_urls(url)
        websocket = {urlsplit(server).scheme in ("ws", "wss") for server in servers}
        if len(websocket) > 1:
            raise ValueError("mixes websocket (ws, wss) and plain (nats, tls) URLs")
        return url

    @field_validator("replicas")
    @classmethod
    def _replicas_need_a_cluster(cls, replicas: int, info: ValidationInfo) -> int:
        # ``url`` comes first, so it is validated (or failed, and absent) by now.
        if replicas > 1 and info.data.get("url") is None and "url" in info.data:
            raise ValueError(
                f"{replicas} replicas need an external NATS cluster: the embedded server is a"
                " single node and cannot hold replicas (set services.nats.url to the cluster's"
                " nodes, or replicas to 1)"
            )
        return replicas

    @property
    def servers(self) -> list[str]:
        """The configured server URLs (empty for the embedded server)."""
        return [] if self.url is None else nats_servers(self.url)


class TemporalConfig(_Section):
    address: str | None = None
    """External Temporal frontend ``host:port``; unset means the embedded dev server."""
    port: int = Field(default=7233, ge=0, le=65535)
    """Preferred port of the embedded dev server (a free one is chosen if taken; 0 = any)."""
    ui: bool = False
    """Run the embedded dev server's Web UI. Off by default: it has no auth and shows every
    history to any local user (docs/security.md)."""
    ui_port: int = Field(default=8233, ge=0, le=65535)
    """Preferred port of the embedded Web UI when ``ui`` is on (0 = any free port)."""
    namespace: str = "default"
    """Temporal namespace."""
    task_queue: str = "semspec"
    """Task queue workers poll."""
    tls_cert: str | None = None
    """Client certificate file for mTLS."""
    tls_key: str | None = None
    """Client key file for mTLS."""
    api_key: SecretStr | None = None
    """API key (Temporal Cloud)."""


class GraphServerConfig(_Section):
    port: int = Field(default=0, ge=0, le=65535)
    """Port of the graph server ``semspec up`` starts over ``graph.path`` in embedded mode
    (0 = any free port; every process of the stack finds it in ``services.json``)."""


class ServicesConfig(_Section):
    run_dir: str = ".semspec/run"
    """Where the embedded services keep their data, PIDs and ports."""
    nats: NatsConfig = Field(default_factory=NatsConfig)
    """NATS JetStream connection."""
    temporal: TemporalConfig = Field(default_factory=TemporalConfig)
    """Temporal connection."""
    graph: GraphServerConfig = Field(default_factory=GraphServerConfig)
    """The embedded stack's graph server (the graph's mode and location are under ``graph``)."""


class GraphConfig(_Section):
    mode: Literal["embedded", "sparql"] = "embedded"
    """``embedded`` (Oxigraph files under ``path``; while ``semspec up`` runs, every process uses
    the graph server it started over them) or ``sparql`` (an external SPARQL 1.1 endpoint)."""
    path: str = ".semspec/graph"
    """Store directory in embedded mode (opened directly only when no stack serves it)."""
    query_url: str | None = None
    """SPARQL query endpoint in sparql mode."""
    update_url: str | None = None
    """SPARQL update endpoint in sparql mode."""
    timeout_s: float = Field(default=30.0, gt=0)
    """Seconds one request to a SPARQL endpoint (external, or the stack's server) may take."""
    token_file: str | None = None
    """Absolute path (``~`` allowed) of a file holding a token sent as ``Authorization: Bearer``
    with every request to the endpoint in sparql mode; unset sends none. The stack's own graph
    server needs no setting: its token is in the run folder."""

    @model_validator(mode="after")
    def _endpoint_urls(self) -> GraphConfig:
        if self.mode == "sparql" and not (self.query_url and self.update_url):
            raise ValueError("sparql mode needs both query_url and update_url")
        if self.token_file and not Path(self.token_file).expanduser().is_absolute():
            raise ValueError("token_file must be an absolute path")
        return self


DEFAULT_INDEX_EXCLUDES = (
    ".git",
    "node_modules",
    "vendor",
    "dist",
    "build",
    ".venv",
    "__pycache__",
    ".semspec",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".tox",
)


class IndexConfig(_Section):
    max_file_bytes: int = Field(default=1_000_000, gt=0)
    """Files larger than this many bytes are skipped by ``semspec index``."""
    exclude_dirs: list[str] = Field(default_factory=lambda: list(DEFAULT_INDEX_EXCLUDES))
    """Directory names never descended into, wherever they occur in the repository."""
    workers: int | Literal["auto"] = "auto"
    """Processes that parse files while ``semspec index`` writes the graph, once a run has 200
    or more files to parse (shorter runs parse in the command's own process): a number (0:
    never a pool) or ``auto``, one per core (docs/indexing.md has the measurement)."""

    @field_validator("workers")
    @classmethod
    def _some_workers(cls, workers: int | str) -> int | str:
        if isinstance(workers, int) and workers < 0:
            raise ValueError("workers must be 0 or more, or 'auto'")
        return workers


# Where tests usually live, per ecosystem: test folders at any depth, and test files by name.
DEFAULT_SCOPE_ALLOW = (
    "**/tests/**",
    "**/test/**",
    "**/__tests__/**",
    "**/spec/**",
    "**/testdata/**",
    "**/test_*.py",
    "**/*_test.py",
    "**/conftest.py",
    "**/*_test.go",
    "**/*.test.js",
    "**/*.test.ts",
    "**/*.test.jsx",
    "**/*.test.tsx",
    "**/*.spec.js",
    "**/*.spec.ts",
    "**/*.spec.jsx",
    "**/*.spec.tsx",
)


class ScopeConfig(_Section):
    allow: list[str] = Field(default_factory=lambda: list(DEFAULT_SCOPE_ALLOW))
    """Gitignore-style globs (as in an SOP's ``applies_to``) of files a developer may change
    besides the task's files without it counting as scope creep; by default the usual test
    locations. Set ``[]`` to flag every file outside the task."""

    @field_validator("allow")
    @classmethod
    def _plain_globs(cls, globs: list[str]) -> list[str]:
        for glob in globs:
            # gitignore reads these as negation or comment, which a single glob cannot mean.
            if not glob.strip() or glob.startswith(("!", "#")):
                raise ValueError(f"{glob!r} is not a glob of paths (empty, or starts with ! or #)")
        return globs


RuleFileKind = Literal["agents_md", "claude_md", "cursor_rules", "copilot"]
"""Rule files written for other tools that ``semspec sources sync`` reads (docs/sops.md)."""
RULE_FILE_KINDS: tuple[RuleFileKind, ...] = ("agents_md", "claude_md", "cursor_rules", "copilot")


class SourcesConfig(_Section):
    rules: list[RuleFileKind] = Field(default_factory=lambda: list(RULE_FILE_KINDS))
    """Kinds of rule files read besides the SOP folder: ``agents_md`` (``AGENTS.md`` at any
    depth), ``claude_md`` (``CLAUDE.md`` at any depth, with its ``@`` imports), ``cursor_rules``
    (``.cursor/rules/*.mdc``), ``copilot`` (``.github/copilot-instructions.md`` and
    ``.github/instructions/*.instructions.md``); by default all. ``[]`` reads SOPs only."""


class ConsoleConfig(_Section):
    enabled: bool = True
    """Whether ``semspec up`` starts the web console (``semspec ui`` serves it either way)."""
    port: int = Field(default=0, ge=0, le=65535)
    """Loopback port of the console (0 = any free port; ``up`` keeps the one it had while the
    run folder lasts). The URL with its secret is printed by ``up``, ``status`` and ``ui``."""


class SecurityConfig(_Section):
    owner_key: str | None = None
    """Path of the stack owner's signing key (relative paths from the repository root); unset
    means ``owner.key`` in the run folder. Point several repositories or machines that share a
    Temporal cluster at one key file so each may answer the others' tasks (docs/security.md)."""


OtlpProtocol = Literal["http/protobuf", "grpc"]
OTLP_PORTS: dict[str, int] = {"http/protobuf": 4318, "grpc": 4317}
"""The OTLP receiver's usual port per protocol (a collector listens on both)."""


def _endpoint_problem(endpoint: str) -> PydanticCustomError | None:
    """Why ``endpoint`` is not an OTLP receiver's ``http(s)://host:port``, with the right form.

    semspec appends ``/v1/traces`` and ``/v1/metrics`` itself (as the OTLP exporters' base
    endpoint does), so a path would be posted to twice (``/v1/traces/v1/traces``)."""
    parsed = urlsplit(endpoint)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        problem = f"{endpoint!r}: expected http://host:port or https://host:port"
        return PydanticCustomError("value_error", "{problem}", {"problem": problem})
    if parsed.path.strip("/") or parsed.query or parsed.fragment:
        base = f"{parsed.scheme}://{parsed.netloc}"
        problem = f"{endpoint!r}: expected http://host:port without a path"
        hint = f"use {base}: semspec adds /v1/traces and /v1/metrics itself"
        return PydanticCustomError("value_error", "{problem}", {"problem": problem, "hint": hint})
    return None


class TelemetrySignalConfig(_Section):
    enabled: bool = True
    """Export this signal while ``telemetry.enabled`` is on; false = never (e.g. a backend
    that takes traces only)."""
    endpoint: str | None = None
    """OTLP receiver of this signal alone, ``http://host:port``; unset = ``telemetry.endpoint``."""

    @field_validator("endpoint")
    @classmethod
    def _endpoint_url(cls, endpoint: str | None) -> str | None:
        if endpoint is not None and (problem := _endpoint_problem(endpoint)) is not None:
            raise problem
        return endpoint


class TelemetryConfig(_Section):
    enabled: bool = False
    """Export OpenTelemetry traces (one per task) and the monitor's metrics over OTLP; needs
    ``pip install 'semspec[otel]'`` (docs/telemetry.md)."""
    endpoint: str | None = None
    """OTLP receiver, ``http://host:port`` (no path); unset = a collector on this machine
    (``http://127.0.0.1:4318``, or port 4317 for ``grpc``)."""
    protocol: OtlpProtocol = "http/protobuf"
    """OTLP transport: ``http/protobuf`` or ``grpc``."""
    service_name: str = Field(default="semspec", min_length=1)
    """``service.name`` of every process's spans and metrics (each also names its part in
    ``semspec.component``: worker, cli, monitor)."""
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    """Headers sent with every export (e.g. a vendor's API key); never logged or shown."""
    metrics_interval_s: float = Field(default=10.0, gt=0)
    """Seconds between two exports of the monitor's metrics."""
    traces: TelemetrySignalConfig = Field(default_factory=TelemetrySignalConfig)
    """Traces on or off, and their own receiver."""
    metrics: TelemetrySignalConfig = Field(default_factory=TelemetrySignalConfig)
    """The monitor's metrics on or off, and their own receiver."""

    @field_validator("endpoint")
    @classmethod
    def _endpoint_url(cls, endpoint: str | None) -> str | None:
        if endpoint is not None and (problem := _endpoint_problem(endpoint)) is not None:
            raise problem
        return endpoint

    @property
    def receiver(self) -> str:
        """The endpoint exports go to: the one set, else the local collector's."""
        return self.endpoint or f"http://127.0.0.1:{OTLP_PORTS[self.protocol]}"

    def receiver_of(self, signal: Literal["traces", "metrics"]) -> str:
        """Where ``signal`` goes: its own endpoint, else the section's."""
        own = self.traces if signal == "traces" else self.metrics
        return own.endpoint or self.receiver


class SemspecConfig(_Section):
    project: ProjectConfig = Field(default_factory=ProjectConfig)
    """The project this repository is."""
    gates: GatesConfig = Field(default_factory=GatesConfig)
    """Mechanical checks run in the worktree after each developer iteration. A Python project's
    gates import the worktree's code (its import roots first on ``PYTHONPATH``; no gate runs
    when Python would find that code elsewhere); a gate whose program is not found fails the
    task once, as a configuration error. A gate with a ``format`` has its output read into
    findings (file, line, rule, message), shown before its raw output (``pytest``: from the
    JUnit XML report pytest is asked for through ``PYTEST_ADDOPTS``, written outside the
    worktree; its printed summary when there is none); with ``baseline: auto`` (the default)
    findings and failing tests already on the task's base commit do not count."""
    loop: LoopConfig = Field(default_factory=LoopConfig)
    """Bounds of the developer/reviewer loop."""
    risk: RiskConfig = Field(default_factory=RiskConfig)
    """Risk monitor thresholds and levels."""
    context: ContextConfig = Field(default_factory=ContextConfig)
    """Context budget parameters."""
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    """Model per role."""
    services: ServicesConfig = Field(default_factory=ServicesConfig)
    """Embedded or external services."""
    graph: GraphConfig = Field(default_factory=GraphConfig)
    """Knowledge graph store."""
    index: IndexConfig = Field(default_factory=IndexConfig)
    """What ``semspec index`` reads into the code meaning graph."""
    scope: ScopeConfig = Field(default_factory=ScopeConfig)
    """What a task may change besides its own files without being flagged as scope creep."""
    sources: SourcesConfig = Field(default_factory=SourcesConfig)
    """Which rule files ``semspec sources sync`` and the reviewer read besides SOPs."""
    security: SecurityConfig = Field(default_factory=SecurityConfig)
    """Who may steer the stack's tasks (the owner's signing key)."""
    console: ConsoleConfig = Field(default_factory=ConsoleConfig)
    """The web console on loopback (docs/console.md)."""
    telemetry: TelemetryConfig = Field(default_factory=TelemetryConfig)
    """OpenTelemetry traces and metrics (off unless enabled and installed)."""
