"""Split a too-large task's files into groups that each fit, or refuse naming the file that can't.

Files that import each other stay together: the import graph's connected components are the
units, and a component is split only when it alone exceeds the limits (then along a breadth-first
walk, so neighbours land in the same group where possible). Components that fit are packed into
as few groups as possible, largest first. Every choice is ordered by tokens then path, so the
same input always gives the same groups (this runs in workflow code).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from semspec.workflow.context.budget import BudgetReport


@dataclass(frozen=True)
class SubtaskLimits:
    """What one group may hold: at most ``max_files`` files and ``max_file_tokens`` tokens."""

    max_files: int
    max_file_tokens: int


@dataclass(frozen=True)
class Refusal:
    """A file larger than a whole group may hold: no decomposition helps."""

    file: str
    tokens: int
    limit: int

    @property
    def message(self) -> str:
        """One sentence saying what is too large and what to do."""
        return (
            f"{self.file} alone holds {self.tokens:,} tokens, over the {self.limit:,}-token file "
            "limit of the model; split the file, pick a model with a larger window, or leave the "
            "file out of the task"
        )


def limits_from_budget(report: BudgetReport) -> SubtaskLimits:
    """The group limits implied by a budget report (max task files, file token limit)."""
    return SubtaskLimits(report.max_task_files, report.file_token_limit)


def _components(files: list[str], imports: dict[str, set[str]]) -> list[list[str]]:
    """Connected components of the undirected import graph restricted to ``files``, BFS order."""
    present = set(files)
    neighbours: dict[str, set[str]] = {path: set() for path in files}
    for source, targets in imports.items():
        if source not in present:
            continue
        for target in targets & present - {source}:
            neighbours[source].add(target)
            neighbours[target].add(source)
    seen: set[str] = set()
    components: list[list[str]] = []
    for root in sorted(files):
        if root in seen:
            continue
        order: list[str] = []
        queue = deque([root])
        seen.add(root)
        while queue:
            path = queue.popleft()
            order.append(path)
            for nxt in sorted(neighbours[path] - seen):
                seen.add(nxt)
                queue.append(nxt)
        components.append(order)
    return components


def _split(order: list[str], tokens: dict[str, int], limits: SubtaskLimits) -> list[list[str]]:
    """Cut a component's walk order into consecutive groups within the limits."""
    groups: list[list[str]] = [[]]
    used = 0
    for path in order:
        group = groups[-1]
        if group and (
            len(group) >= limits.max_files or used + tokens[path] > limits.max_file_tokens
        ):
            groups.append([])
            used = 0
        groups[-1].append(path)
        used += tokens[path]
    return groups


def plan_subtasks(
    file_tokens: dict[str, int], imports: dict[str, set[str]], limits: SubtaskLimits
) -> list[list[str]] | Refusal:
    """Groups of task files that each fit ``limits``, or a Refusal naming the largest misfit."""
    if limits.max_files < 1:
        raise ValueError("limits.max_files must be at least 1")
    too_big = sorted((-n, path) for path, n in file_tokens.items() if n > limits.max_file_tokens)
    if too_big:
        tokens, path = -too_big[0][0], too_big[0][1]
        return Refusal(path, tokens, limits.max_file_tokens)

    units: list[list[str]] = []
    for component in _components(list(file_tokens), imports):
        total = sum(file_tokens[p] for p in component)
        if len(component) <= limits.max_files and total <= limits.max_file_tokens:
            units.append(component)
        else:
            units.extend(_split(component, file_tokens, limits))

    # First-fit decreasing: big units first, each into the first group with room.
    units.sort(key=lambda unit: (-sum(file_tokens[p] for p in unit), unit[0]))
    groups: list[list[str]] = []
    for unit in units:
        size = sum(file_tokens[p] for p in unit)
        for group in groups:
            room = limits.max_file_tokens - sum(file_tokens[p] for p in group)
            if len(group) + len(unit) <= limits.max_files and size <= room:
                group.extend(unit)
                break
        else:
            groups.append(list(unit))
    return [sorted(group) for group in groups]
