"""Files made of many small definitions: families fold into one claim whose span holds them all.

Issue 31 measured a visitor class of one-line abstract methods (mypy's ``visitor.py``) saving
0.397 while each method had a claim of its own. Each test checks that every definition the
claim names lies inside the claim's evidence span, on a line that names it, in a file whose
hash the pointer carries.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from semspec.knowledge.code_index import Symbol, extract_facts, pack_evidence, pack_facts
from semspec.knowledge.code_index.pack_names import folded_names
from semspec.knowledge.code_index.pack_stubs import named_parameters
from semspec.model.tokens import count_tokens

VISITOR = "from typing import Generic, TypeVar\n\nimport nodes\n\nT = TypeVar('T')\n\n\n" + (
    "class ExpressionVisitor(Generic[T]):\n"
    + "".join(
        f"    def visit_{name}(self, o: nodes.{name.title()}Expr, /) -> T: pass\n"
        for name in ("int", "str", "bytes", "float", "call", "name")
    )
)
EXCEPTIONS = "class Error(Exception):\n    pass\n\n\n" + "".join(
    f"class {name}Error({base}):\n    pass\n\n\n"
    for name, base in (
        ("Timeout", "Error"),
        ("NoResponders", "Error"),
        ("StaleConnection", "Error"),
        ("FlushTimeout", "TimeoutError"),
        ("BadSubject", "Error"),
    )
)
ENUMS = "import enum\n\n\n" + "".join(
    f"class {name}(enum.Enum):\n    A = 1\n    B = 2\n\n\n" for name in ("Color", "Shape", "Mode")
)


def _claims(path: str, source: str) -> list[tuple[str, str, int, int]]:
    """(line, digest, start, end) of every claim but the file's, checked against ``source``."""
    text = pack_facts([extract_facts(path, source.encode())]).text
    lines = [line.strip() for line in text.splitlines() if line.strip()[:1].isdigit()]
    pointers = list(pack_evidence(text).values())[1:]  # n0 is the file line
    assert len(pointers) == len(lines)
    found = []
    for line, pointer in zip(lines, pointers, strict=True):
        span, _, digest = pointer.partition(":")[2].partition("#")
        start, end = (int(n) for n in span.split("-"))
        assert hashlib.sha256(source.encode()).hexdigest().startswith(digest)
        found.append((line, digest, start, end))
    return found


def _unfolded(label: str) -> set[str]:
    """The names a claim writes, ``visit_{a,b}`` written out."""
    label = re.sub(
        r"(\w*)\{([\w,]+)\}(\w*)",
        lambda m: " ".join(f"{m[1]}{middle}{m[3]}" for middle in m[2].split(",")),
        label,
    )
    return set(re.findall(r"\w+", label))


def _assert_inside(path: str, source: str, names: list[str], claim: str) -> None:
    """Each of ``names`` is defined on a line inside ``claim``'s span and named by it."""
    source_lines = source.splitlines()
    for line, _digest, start, end in _claims(path, source):
        if line.split(" ", 1)[1].startswith(claim):
            written = _unfolded(line)
            for name in names:
                assert name in written, (name, line)
                at = next(i for i, text in enumerate(source_lines, 1) if f" {name}" in text)
                assert start <= at <= end, (name, at, line)
            return
    raise AssertionError(f"no claim starts with {claim!r}")


def test_a_visitor_class_of_one_line_methods_is_one_claim_with_the_shared_pattern() -> None:
    text = pack_facts([extract_facts("visitor.py", VISITOR.encode())]).text
    assert "visit_{int,str,bytes,float,call,name}(o: nodes.…, /) -> T" in text
    assert len(_claims("visitor.py", VISITOR)) == 3  # the class, its methods, the imports
    names = [f"visit_{n}" for n in ("int", "str", "bytes", "float", "call", "name")]
    _assert_inside("visitor.py", VISITOR, names, "visit_")


def test_an_exception_module_is_one_claim_grouped_by_base() -> None:
    text = pack_facts([extract_facts("errors.py", EXCEPTIONS.encode())]).text
    assert (
        "\n1+21 classes Error(Exception); {Timeout,NoResponders,StaleConnection,BadSubject}"
        "Error(Error); FlushTimeoutError(TimeoutError)\n"
    ) in text
    names = ["Error", "TimeoutError", "NoRespondersError", "StaleConnectionError"]
    _assert_inside("errors.py", EXCEPTIONS, [*names, "FlushTimeoutError"], "classes ")
    assert len(_claims("errors.py", EXCEPTIONS)) == 1


def test_enums_without_methods_are_one_claim_and_their_span_holds_their_values() -> None:
    text = pack_facts([extract_facts("modes.py", ENUMS.encode())]).text
    assert "classes {Color,Shape,Mode}(enum.Enum)" not in text  # no shared word to fold
    assert "classes Color,Shape,Mode(enum.Enum)" in text
    _assert_inside("modes.py", ENUMS, ["Color", "Shape", "Mode"], "classes ")
    (claim,) = [c for c in _claims("modes.py", ENUMS) if c[0].split(" ", 1)[1][:8] == "classes "]
    assert claim[3] == len(ENUMS.rstrip().splitlines())  # the last value is inside


def test_two_alike_siblings_keep_a_claim_each() -> None:
    source = "def visit_a(o: int) -> T: pass\ndef visit_b(o: str) -> T: pass\n"
    text = pack_facts([extract_facts("two.py", source.encode())]).text
    assert "\n1 visit_a(o: int) -> T\n2 visit_b(o: str) -> T\n" in text


def test_names_fold_at_word_boundaries_only() -> None:
    assert folded_names(["visit_int_expr", "visit_str_expr"]) == "visit_{int,str}_expr"
    assert folded_names(["NoRespondersError", "StaleError"]) == "{NoResponders,Stale}Error"
    assert folded_names(["Error", "TimeoutError"]) == "Error,TimeoutError"
    assert folded_names(["reset", "restore"]) == "reset,restore"


SAMPLES = Path(__file__).parents[1] / "data" / "pack_samples"
"""Excerpts of cryptography (see its README for source and licence)."""


def test_a_stub_writes_parameters_by_name_and_each_return_type_once() -> None:
    source = (SAMPLES / "cryptography_aead.pyi").read_text(encoding="utf-8")
    text = pack_facts([extract_facts("aead.pyi", source.encode())]).text
    assert (
        "generate_key(bit_length),encrypt(nonce, data, associated_data),"
        "decrypt(nonce, data, associated_data): bytes; "
        "{encrypt,decrypt}_into(nonce, data, associated_data, buf): int\n"
    ) in text
    assert "Buffer" not in text  # the parameters' types are in the span
    methods = ["__init__", "generate_key", "encrypt", "decrypt", "encrypt_into", "decrypt_into"]
    _assert_inside("aead.pyi", source, methods, "class AESGCM: __init__(key); generate_key(")


def test_a_class_whose_members_are_one_run_is_one_claim_with_them() -> None:
    source = (SAMPLES / "cryptography_aead.pyi").read_text(encoding="utf-8")
    claims = _claims("aead.pyi", source)
    assert [c[0].split(" ", 2)[1] for c in claims] == ["class", "imports"]
    assert (claims[0][2], claims[0][3]) == (9, 38)  # the class's span: every member inside


def test_a_class_declaring_members_as_a_class_above_names_them_once() -> None:
    source = (SAMPLES / "cryptography_kdf.pyi").read_text(encoding="utf-8")
    text = pack_facts([extract_facts("kdf.pyi", source.encode())]).text
    assert (
        "class PBKDF2HMAC: __init__(algorithm, length, salt, iterations, backend?); "
        "derive(key_material): bytes; derive_into(key_material, buffer): int; "
        "verify(key_material, expected_key): None\n"
    ) in text
    scrypt = "class Scrypt: __init__(salt, length, n, r, p, backend?); derive,derive_into,verify ^"
    assert f" {scrypt}\n" in text
    methods = ["__init__", "derive", "derive_into", "verify"]
    claims = [c for c in _claims("kdf.pyi", source) if c[0].split(" ")[1] == "class"]
    assert len(claims) == 2
    for _line, _digest, start, end in claims:  # each class's span holds its own methods
        inside = source.splitlines()[start - 1 : end]
        assert all(any(f"def {m}(" in text for text in inside) for m in methods)


def test_a_class_with_a_long_method_keeps_a_claim_per_member() -> None:
    body = "".join(f"        x{i} = {i}\n" for i in range(5))
    source = f"class Job:\n    def run(self) -> None:\n{body}    def stop(self) -> None: ...\n"
    text = pack_facts([extract_facts("job.py", source.encode())]).text
    assert "\n1+7 class Job\n 2+5 run() -> None\n 8 stop ^\n" in text


def test_an_abstract_class_is_one_claim_with_its_methods_by_parameter_name() -> None:
    source = (SAMPLES / "cryptography_dsa.py").read_text(encoding="utf-8")
    text = pack_facts([extract_facts("dsa.py", source.encode())]).text
    assert (
        "\n16+39 class DSAPublicKey(metaclass=abc.ABCMeta): key_size: int; "
        "parameters: DSAParameters; public_numbers: DSAPublicNumbers; "
        "public_bytes(encoding, format): bytes; verify(signature, data, algorithm): None\n"
    ) in text
    assert "HashAlgorithm" not in text
    methods = ["key_size", "parameters", "public_numbers", "public_bytes", "verify"]
    _assert_inside("dsa.py", source, methods, "class DSAPublicKey(")


def test_a_plain_class_keeps_its_parameter_types() -> None:
    source = (
        "class Box:\n    def put(self, item: bytes, *, tag: str = 'x') -> None:\n        pass\n"
    )
    text = pack_facts([extract_facts("box.py", source.encode())]).text
    assert "put(item: bytes, *, tag: str='x') -> None" in text


def test_interface_parameters_keep_markers_and_defaults() -> None:
    symbol = Symbol(
        "f", "function", "def f(a: int, /, b: str = '', *args: int, c: T, d: T = 1, **kw: T)", 1, 1
    )
    assert named_parameters(symbol) == "def f(a, /, b?, *args, c, d?, **kw)"


def _defined(source: str) -> dict[str, list[int]]:
    """Each function or method the source defines, with the lines of its ``def``."""
    found: dict[str, list[int]] = {}
    for number, line in enumerate(source.splitlines(), 1):
        match = re.match(r"\s*def (\w+)\(", line)
        if match:
            found.setdefault(match[1], []).append(number)
    return found


def _named(claim: str, words: dict[str, str]) -> set[str]:
    """The names a claim writes, dictionary ids and ``{a,b}`` folds written out, parameter
    lists left out (a parameter may be named like a member elsewhere)."""
    for ident, text in words.items():
        claim = re.sub(rf"(?<![\w.]){ident}(?!\w)", text, claim)
    return _unfolded(re.sub(r"\([^()]*\)", "", claim))


def _check_pointers(path: str, source: str) -> list[tuple[str, int, int]]:
    """Every claim points at lines defining each member it names, and every public member of
    the file is named by a claim whose span holds its ``def``; returns (claim, start, end)."""
    text = pack_facts([extract_facts(path, source.encode())]).text
    words = {
        line.split(" ", 1)[0]: line.split(" ", 1)[1]
        for line in text.splitlines()
        if re.match(r"d\d+ ", line)
    }
    defined = _defined(source)
    claims = [(line, start, end) for line, _digest, start, end in _claims(path, source)]
    for line, start, end in claims:
        for name in _named(line.split(" ", 1)[1], words) & set(defined):
            assert any(start <= at <= end for at in defined[name]), (name, line)
    for name, lines in defined.items():
        if name.startswith("_"):
            continue
        for at in lines:
            assert any(
                start <= at <= end and name in _named(line.split(" ", 1)[1], words)
                for line, start, end in claims
            ), (name, at)
    return claims


def test_a_stub_of_many_typed_properties_packs_under_three_tenths_with_exact_pointers() -> None:
    # Issue 31: cryptography's x509.pyi, properties whose return types are most of the text,
    # saved 0.574. Here its first 212 lines (module functions, Sct, Certificate, CRL, CSR).
    source = (SAMPLES / "cryptography_x509.pyi").read_text(encoding="utf-8")
    text = pack_facts([extract_facts("x509.pyi", source.encode())]).text
    saved = 1 - count_tokens(text) / count_tokens(source)
    assert count_tokens(source) >= 1000
    assert saved >= 0.70, (saved, text)
    claims = _check_pointers("x509.pyi", source)
    assert [line.split(" ", 2)[1] for line, _s, _e in claims[1:-1]] == ["class"] * 5
    assert "not_valid_{before,before_utc,after,after_utc}: datetime" in text
    assert "signature_hash_algorithm: HashAlgorithm?" in text  # ``hashes.`` and ``| None``
    assert text.endswith("\n5+13 imports cryptography\n")  # the package the types come from


def test_members_named_again_are_declared_alike_by_a_claim_above() -> None:
    source = (SAMPLES / "shop_orders.pyi").read_text(encoding="utf-8")
    text = pack_facts([extract_facts("orders.pyi", source.encode())]).text
    assert " class Refund: {refund,order}_id: str; created_{at,at_utc},currency,total,lines ^;" in (
        f" {text}"
    )
    claims = _check_pointers("orders.pyi", source)
    declared = {}
    for line, _start, _end in claims:
        for group in line.split(": ", 1)[-1].split("; "):
            names = group.rpartition(": ")[0]
            if group.endswith(" ^"):
                for name in _unfolded(group.removesuffix(" ^")):
                    assert name in declared, (name, line)  # a claim above gives its type
            elif names:
                declared.update(dict.fromkeys(_unfolded(re.sub(r"\([^()]*\)", "", names))))
    # ``total`` is an ``Amount`` in OrderLine and Order, a different type nowhere: one ``^``.
    assert "; total ^;" in text


def test_a_return_of_one_type_or_none_is_written_with_a_question_mark() -> None:
    source = (
        "def find(key: str) -> Row | None:\n    pass\n\n\ndef pick() -> A | B | None:\n    pass\n"
    )
    text = pack_facts([extract_facts("rows.py", source.encode())]).text
    assert "\n1+1 find(key: str) -> Row?\n5+1 pick() -> A | B | None\n" in text
