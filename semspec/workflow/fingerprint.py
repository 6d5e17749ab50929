"""Evidence fingerprints: has anything changed since the last attempt?

A fingerprint is the sha256 of canonical JSON (sorted keys, sorted arrays, no whitespace) of the
diff hash, the failed gates and the review findings. The loop never retries an attempt whose
fingerprint it has already seen: the same evidence would give the same answer.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and recursively sorted arrays, so equal evidence is equal text."""
    return json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _canonical(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [_canonical(v) for v in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    return value


def evidence_fingerprint(
    diff_hash: str,
    gate_failures: Iterable[Mapping[str, Any]],
    findings: Iterable[Mapping[str, Any]],
) -> str:
    """sha256 over the canonical JSON of one attempt's evidence."""
    body = {
        "diff": diff_hash,
        "gate_failures": list(gate_failures),
        "findings": list(findings),
    }
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()
