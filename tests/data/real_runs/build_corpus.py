"""Builds the corpus of real recorded runs from the public repositories that publish them.

Usage (the sources are git checkouts of the repositories named in README.md, at the commits
named there):

    python tests/data/real_runs/build_corpus.py \\
        --mini PATH/TO/gruckion-mini-swe-agent --swe-agent PATH/TO/SWE-agent \\
        --openhands PATH/TO/OpenHands

Each run is trimmed to what ``semspec monitor replay`` reads, and written gzip-compressed:

- a long tool output keeps its first and last lines (about 600 and 400 characters) and, in
  between, one line naming how many characters were cut and a digest of them, blanked as the
  monitor blanks outputs (``semspec.vocabulary.step_text``): two outputs that were the same
  stay the same, two that differed still differ;
- a model reply keeps every fenced block (long bodies cut the same way) and at most 400
  characters of the prose around them, so its tool call reads as it did;
- token counts the recording states per call are kept; system prompts, reasoning, model
  response bodies and agent configs are dropped.

The script checks every run after trimming: replayed with the default rules, it must fire the
same rules at the same steps, and every pair of tool steps must compare (same action, same
output) as it did untrimmed. Labels are not written here: ``labels.json`` was written by
reading the runs (README.md says how).
"""

from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from semspec.core.config.models import RiskConfig
from semspec.processors.risk_monitor.replay.backtest import backtest
from semspec.processors.risk_monitor.replay.files import read_runs
from semspec.processors.risk_monitor.replay.runs import RecordedRun
from semspec.vocabulary.fenced_blocks import fence_lines
from semspec.vocabulary.step_text import normalized_output, text_digest

HERE = Path(__file__).resolve().parent
MINI_RUNS = "swebench_results/20251118_gemini-3-pro-74pct/trajs"
HEAD, TAIL, PROSE, BODY = 600, 400, 400, 2000


def trim_output(text: str, head: int = HEAD, tail: int = TAIL) -> str:
    """``text`` with its middle replaced by one line naming its length and digest."""
    if len(text) <= head + tail + 200:
        return text
    cut_start = text.rfind("\n", 0, head) + 1 or head
    cut_end = text.find("\n", len(text) - tail)
    cut_end = len(text) - tail if cut_end < 0 else cut_end
    if cut_end <= cut_start:
        return text
    middle = text[cut_start:cut_end]
    holds = " (it says: command not found)" if "command not found" in middle else ""
    digest = text_digest(normalized_output(middle))
    marker = f"[... {len(middle)} characters trimmed, digest {digest}{holds} ...]"
    return text[:cut_start] + marker + text[cut_end:]


def trim_reply(text: str) -> str:
    """A model reply: every fence line and block body kept (long bodies cut), prose cut."""
    out: list[str] = []
    prose = 0
    body: list[str] = []
    for line, part in fence_lines(text):
        if part == "body":
            body.append(line)
            continue
        if body or part == "close":
            out.append(trim_output("\n".join(body), BODY // 2, BODY // 2))
            body = []
        if part in ("open", "close"):
            out.append(line)
        elif prose < PROSE and "```" not in line:
            out.append(line[: PROSE - prose])  # prose past the budget, or a fence-like line
            prose += len(line)
    if body:
        out.append(trim_output("\n".join(body), BODY // 2, BODY // 2))
    return "\n".join(out)


def mini_run(path: Path) -> dict[str, Any]:
    document = json.loads(path.read_text())
    info = document.get("info", {})
    messages = []
    for message in document["messages"]:
        role, content = message["role"], message.get("content") or ""
        if role == "system":
            continue
        if role == "assistant":
            kept: dict[str, Any] = {"role": role, "content": trim_reply(content)}
            usage = (message.get("extra") or {}).get("response", {}).get("usage")
            if isinstance(usage, dict):
                kept["usage"] = {
                    "prompt_tokens": usage.get("prompt_tokens"),
                    "completion_tokens": usage.get("completion_tokens"),
                }
            messages.append(kept)
        else:
            messages.append({"role": role, "content": trim_output(content)})
    return {
        "trajectory_format": document.get("trajectory_format"),
        "instance_id": document.get("instance_id"),
        "info": {
            "mini_version": info.get("mini_version"),
            "exit_status": info.get("exit_status"),
            "model_stats": info.get("model_stats"),
            "config": {"model": {"model_name": info["config"]["model"]["model_name"]}},
        },
        "messages": messages,
    }


def swe_agent_run(path: Path) -> dict[str, Any] | None:
    document = json.loads(path.read_text())
    trajectory = document.get("trajectory")
    if not trajectory:
        return None  # a bare chat history with no run behind it
    info = document.get("info", {})
    return {
        "info": {"exit_status": info.get("exit_status"), "model_stats": info.get("model_stats")},
        "trajectory": [
            {
                "action": entry.get("action", ""),
                "observation": trim_output(entry.get("observation") or ""),
                "response": trim_reply(entry.get("response") or ""),
            }
            for entry in trajectory
        ],
    }


def openhands_run(path: Path) -> list[dict[str, Any]]:
    events = json.loads(path.read_text())
    kept = []
    for event in events:
        item = {
            k: event[k] for k in ("id", "source", "action", "observation", "cause") if k in event
        }
        if "args" in event:
            item["args"] = {
                k: trim_output(v) if isinstance(v, str) else v for k, v in event["args"].items()
            }
        for key in ("message", "content"):
            if isinstance(event.get(key), str):
                item[key] = trim_output(event[key])
        metadata = event.get("tool_call_metadata")
        if isinstance(metadata, dict):
            item["tool_call_metadata"] = {
                "function_name": metadata.get("function_name"),
                "tool_call_id": metadata.get("tool_call_id"),
                "model_response": {"id": (metadata.get("model_response") or {}).get("id")},
            }
        if isinstance(event.get("extras"), dict) and "exit_code" in event["extras"]:
            item["extras"] = {"exit_code": event["extras"]["exit_code"]}
        kept.append(item)
    return kept


def check_same(original: Path, trimmed: Path) -> None:
    """The trimmed run replays like the original: same firings, same step comparisons."""
    before, after = _one(original), _one(trimmed)
    risk = RiskConfig()
    fired = [(f.rule, f.step) for f in backtest(before, risk).firings]
    if fired != [(f.rule, f.step) for f in backtest(after, risk).firings]:
        raise SystemExit(f"{trimmed}: fires differently after trimming")
    if _pattern(before) != _pattern(after):
        raise SystemExit(f"{trimmed}: its steps compare differently after trimming")


def _one(path: Path) -> RecordedRun:
    return read_runs(path, lambda model: None)[0]


def _pattern(run: RecordedRun) -> list[tuple[int, ...]]:
    """Per step: which earlier step has the same action, output and error flag (or -1)."""
    seen: dict[tuple[str, str, str, bool], int] = {}
    out = []
    for event in run.events:
        data = event.data
        key = (data.kind, data.action_hash, data.observation_hash, data.error)
        out.append((seen.setdefault(key, data.step), int(data.wait)))
    return out


def write(target: Path, document: Any, original: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    raw = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode()
    target.write_bytes(gzip.compress(raw, compresslevel=9, mtime=0))
    check_same(original, target)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mini", type=Path, required=True)
    parser.add_argument("--swe-agent", type=Path, required=True)
    parser.add_argument("--openhands", type=Path, required=True)
    args = parser.parse_args()
    for path in sorted((args.mini / MINI_RUNS).glob("*/*.traj.json")):
        write(HERE / "mini-swe-agent" / f"{path.name}.gz", mini_run(path), path)
    number = 0
    for path in sorted(args.swe_agent.glob("**/*.traj")):
        run = swe_agent_run(path)
        if run is not None:
            number += 1  # one instance has several runs: README.md maps each to its source
            write(HERE / "swe-agent" / f"{number:02d}-{path.stem}.traj.gz", run, path)
    for path in sorted((args.openhands / "tests/runtime/trajs").glob("*.json")):
        write(HERE / "openhands" / f"{path.name}.gz", openhands_run(path), path)
    sizes = subprocess.run(["du", "-sh", str(HERE)], capture_output=True, text=True, check=False)
    print(sizes.stdout.strip())


if __name__ == "__main__":
    main()
