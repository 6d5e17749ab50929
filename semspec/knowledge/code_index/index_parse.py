"""Reading, hashing and parsing one file: the work the index spreads over processes.

``parse_file`` is a plain function of picklable values so a process pool can run it; what it
returns is small (the graph update text, not facts or triples), so the parent only writes.
``parse_all`` runs the jobs in order, in this process or in a pool, holding at most a few
results per worker so memory stays bounded however many files there are.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from semspec.graph.store import replace_graph_update
from semspec.knowledge.code_index.facts import FileFacts, SourceSyntaxError
from semspec.knowledge.code_index.graph_write import facts_to_triples
from semspec.knowledge.code_index.languages import extract_facts, source_hash
from semspec.knowledge.code_index.walk import NotIndexable, read_source
from semspec.vocabulary.code import code_graph

Extractor = Callable[[str, bytes], FileFacts]

IN_FLIGHT_PER_WORKER = 8
"""Jobs handed to each pool process ahead of the writer: keeps both busy, bounds memory."""


@dataclass(frozen=True)
class ParseJob:
    """One file to read: its path, the hash the graph holds for it (None: not indexed)."""

    rel: str
    known_hash: str | None


@dataclass(frozen=True)
class Unchanged:
    """Read and hashed: the graph already holds this content."""

    rel: str
    hash: str
    stat: os.stat_result | None


@dataclass(frozen=True)
class NotRead:
    """Not indexable after all (binary, too large, gone); the reason is reported."""

    rel: str
    reason: str


@dataclass(frozen=True)
class Broken:
    """The parser rejected the file at ``line``."""

    rel: str
    line: int
    message: str


@dataclass(frozen=True)
class Parsed:
    """New content and its graph: ``update`` replaces the file's graph (``facts`` when the
    store needs triples instead of update text)."""

    rel: str
    hash: str
    stat: os.stat_result | None
    """None for content not read from the working tree (a commit's blob)."""
    update: str | None
    facts: FileFacts | None


Outcome = Unchanged | NotRead | Broken | Parsed


@dataclass(frozen=True)
class ParseSettings:
    """What every job of one run shares."""

    repo: str
    max_bytes: int
    as_text: bool
    """Hand back SPARQL update text (built here, in the pool) rather than the facts."""


def parse_file(
    settings: ParseSettings,
    job: ParseJob,
    extract: Extractor = extract_facts,
    content: bytes | None = None,
) -> Outcome:
    """Read ``job``'s file (or take its ``content`` as given) and, when the content is new,
    extract its facts."""
    stat: os.stat_result | None = None
    if content is not None:
        source = content
    else:
        repo = Path(settings.repo)
        try:
            # The stat is taken before the read: a write during the read leaves a stat that
            # no longer matches, so the next run reads the file again.
            stat = os.lstat(repo / job.rel)
            source = read_source(repo, job.rel, settings.max_bytes)
        except (NotIndexable, OSError) as exc:
            return NotRead(job.rel, str(exc) if isinstance(exc, NotIndexable) else "gone")
    digest = source_hash(source)
    if digest == job.known_hash:
        return Unchanged(job.rel, digest, stat)
    try:
        facts = extract(job.rel, source)
    except SourceSyntaxError as exc:
        return Broken(job.rel, exc.line, exc.detail)
    if not settings.as_text:
        return Parsed(job.rel, digest, stat, None, facts)
    update = replace_graph_update(code_graph(job.rel), facts_to_triples(facts))
    return Parsed(job.rel, digest, stat, update, None)


def _run(settings: ParseSettings, job: ParseJob) -> Outcome:
    return parse_file(settings, job)


def parse_all(
    settings: ParseSettings,
    jobs: Iterable[ParseJob],
    workers: int,
    extract: Extractor = extract_facts,
) -> Iterator[Outcome]:
    """Outcomes of ``jobs`` in their order: in this process when ``workers`` is 0 (or the
    extractor is not the default one, which a pool could not share), else in a pool of
    ``workers`` processes while this one writes."""
    if workers < 1 or extract is not extract_facts:
        for job in jobs:
            yield parse_file(settings, job, extract)
        return
    # A fresh interpreter per pool process: forking would copy the store's open handles and
    # threads into the children.
    context = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        waiting: deque[Future[Outcome]] = deque()
        for job in jobs:
            waiting.append(pool.submit(_run, settings, job))
            if len(waiting) >= workers * IN_FLIGHT_PER_WORKER:
                yield waiting.popleft().result()
        while waiting:
            yield waiting.popleft().result()
