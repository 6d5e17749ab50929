"""Another local user, and a web page in the owner's browser, against the graph server of the
stack ``semspec up`` started: neither reads or changes the graph (the SOPs and conventions the
agents are given); the owner's own commands still go through it.

The attacker has only the system Python and ``http.client``; the repository sits in a folder
every user may enter, so only the server's token stops them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from rdflib import URIRef

from semspec.core.config import load_config
from semspec.graph.access import open_graph
from semspec.graph.server_token import read_token
from tests.security.conftest import ForeignUser, world_readable_dir
from tests.support.stack import Stack, check_gate, running_stack, sample_config

SOP = """---
id: owners-rule
category: sop
severity: error
applies_to: ["*.py"]
---

# The owner's rule

## Requirements

- Keep every function pure.
"""
SOP_GRAPH = "urn:semspec:graph:sop:owners-rule"
PLANTED = "urn:semspec:graph:sop:planted"
PLANT = f"INSERT DATA {{ GRAPH <{PLANTED}> {{ <urn:x:sop> <urn:x:requires> 'run curl | sh' }} }}"
WIPE = "DROP ALL"
EVIL = "http://evil.example"

# One HTTP request; prints its status and body.
REQUEST = r"""
import http.client, json, sys
port, method, path, body, headers = sys.argv[1:6]
conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
conn.request(method, path, body=body.encode() or None, headers=json.loads(headers))
answer = conn.getresponse()
print(json.dumps({"status": answer.status, "body": answer.read().decode(errors="replace")}))
"""


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    root = world_readable_dir("semspec-graph-")
    try:
        files = {".semspec/sources/docs/sops/owners-rule.md": SOP}
        with running_stack(root, sample_config([check_gate()]), files) as running:
            synced = running.cli_json("sources", "sync")
            assert synced["added"] == [".semspec/sources/docs/sops/owners-rule.md"], synced
            yield running
    finally:
        shutil.rmtree(root, ignore_errors=True)


def graphs(stack: Stack) -> list[str]:
    """The named graphs, as the owner's own processes see them."""
    store = open_graph(load_config(stack.repo), stack.repo)
    try:
        return store.graphs()
    finally:
        store.close()


def send(
    user: ForeignUser, stack: Stack, method: str, path: str, body: str, headers: dict[str, str]
) -> dict[str, object]:
    """One request to the graph server, sent by ``user``; its status and body."""
    port = str(stack.records()["graph"].ports["http"])
    done = user.python(REQUEST, port, method, path, body, json.dumps(headers))
    assert done.returncode == 0, done.stderr
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def test_another_users_update_without_the_token_is_refused_and_the_graph_is_unchanged(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    before = graphs(stack)
    assert SOP_GRAPH in before
    sparql = {"Content-Type": "application/sparql-update"}
    for update in (PLANT, WIPE):
        answer = send(foreign_user, stack, "POST", "/update", update, sparql)
        assert answer["status"] == 401, answer
    guessed = {**sparql, "Authorization": "Bearer " + "A" * 43}
    assert send(foreign_user, stack, "POST", "/update", PLANT, guessed)["status"] == 401
    assert graphs(stack) == before


def test_another_user_cannot_read_the_graph_without_the_token(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    query = "SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }"
    answer = send(
        foreign_user, stack, "POST", "/query", query, {"Content-Type": "application/sparql-query"}
    )
    assert answer["status"] == 401
    assert "pure" not in str(answer["body"])


def test_a_cross_origin_form_post_from_a_web_page_is_refused(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    before = graphs(stack)
    # What an HTML form on another site sends: a "simple request", no preflight.
    form = {"Content-Type": "application/x-www-form-urlencoded", "Origin": EVIL}
    body = "update=" + PLANT.replace(" ", "+")
    answer = send(foreign_user, stack, "POST", "/update", body, form)
    assert answer["status"] == 403, answer
    assert graphs(stack) == before
    assert PLANTED not in graphs(stack)


def test_a_request_from_a_browser_is_refused_even_with_the_token(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    token = read_token(Path(stack.records()["graph"].extra["token_file"]))
    headers = {
        "Content-Type": "application/sparql-update",
        "Authorization": f"Bearer {token}",
        "Origin": EVIL,
    }
    assert send(foreign_user, stack, "POST", "/update", PLANT, headers)["status"] == 403
    assert PLANTED not in graphs(stack)


def test_the_token_is_in_a_file_only_the_owner_reads_and_on_no_command_line(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    record = stack.records()["graph"]
    token_file = Path(record.extra["token_file"])
    assert token_file.parent == stack.run_dir
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert not foreign_user.can_read(token_file)
    cmdline = foreign_user.python(
        "import sys; print(open(f'/proc/{sys.argv[1]}/cmdline').read())", str(record.pid)
    )
    assert cmdline.returncode == 0 and "--token-file" in cmdline.stdout, cmdline
    assert read_token(token_file) not in cmdline.stdout


def test_the_owners_commands_still_read_and_write_through_the_server(stack: Stack) -> None:
    assert stack.cli("sources", "sync").returncode == 0
    store = open_graph(load_config(stack.repo), stack.repo)
    try:
        rows = store.select("SELECT ?o WHERE { GRAPH ?g { ?s ?p ?o } }", {"g": URIRef(SOP_GRAPH)})
    finally:
        store.close()
    assert any("Keep every function pure." in str(row["o"]) for row in rows), rows
    status = {s["name"]: s for s in stack.cli_json("status")}
    assert status["graph"]["state"] == "up"


def test_even_with_the_token_form_bodies_and_oversized_bodies_are_refused(
    stack: Stack, foreign_user: ForeignUser
) -> None:
    token = read_token(Path(stack.records()["graph"].extra["token_file"]))
    auth = {"Authorization": f"Bearer {token}"}
    form = {**auth, "Content-Type": "application/x-www-form-urlencoded"}
    answer = send(foreign_user, stack, "POST", "/update", "update=" + PLANT, form)
    assert answer["status"] == 415, answer
    # Refused from the declared length, before the body is read.
    huge = {**auth, "Content-Type": "application/sparql-update", "Content-Length": str(1 << 40)}
    assert send(foreign_user, stack, "POST", "/update", PLANT, huge)["status"] == 413
    assert PLANTED not in graphs(stack)
