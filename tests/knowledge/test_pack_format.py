"""The meaning pack's compact forms: each saves tokens where real packages waste them
(``bench/meaning_pack.py``) while the claim, its name and its evidence span stay."""

from __future__ import annotations

import hashlib
import re

from semspec.knowledge.code_index import extract_facts, pack_evidence, pack_facts


def pack_of(path: str, source: str) -> str:
    return pack_facts([extract_facts(path, source.encode())]).text


def words_of(text: str) -> dict[str, str]:
    """Dictionary text → its id."""
    return {
        line.split(" ", 1)[1]: line.split(" ", 1)[0]
        for line in text.splitlines()
        if re.match(r"d\d+ ", line)
    }


OVERLOADED = """from typing import overload


class Client:
    @overload
    def get(self, key: int) -> int: ...

    @overload
    def get(self, key: str) -> str: ...

    def get(self, key):
        return key

    @property
    def size(self) -> int:
        return 1

    @size.setter
    def size(self, value: int) -> None:
        pass
"""


def test_overloads_and_a_property_setter_are_one_claim_spanning_every_definition() -> None:
    text = pack_of("client.py", OVERLOADED)
    assert "\n 6+6 get(key: int) -> int +2\n" in text
    assert "\n 15+5 size() -> int +1\n" in text
    assert text.count(" get(") == 1 and text.count(" size(") == 1
    pointers = pack_evidence(text)
    digest = hashlib.sha256(OVERLOADED.encode()).hexdigest()[:8]
    assert f"client.py:6-12#{digest}" in pointers.values()
    assert f"client.py:15-20#{digest}" in pointers.values()


def test_docs_inside_annotations_and_long_literal_lists_are_abridged() -> None:
    text = pack_of(
        "cli.py",
        "def run(\n"
        "    name: Annotated[str, Doc('The name of the thing that runs, shown in help.')],\n"
        "    mode: Literal['a', 'b', 'c', 'd', 'e', 'f'] = 'a',\n"
        "    tag: Literal['x', 'y', 'z', 'w', 'v'] = 'x',\n"
        "    graph: 'Mapping[str, ConjunctiveGraph]' = None,\n"
        ") -> None:\n"
        "    pass\n",
    )
    assert "\n1+6 run(name: Annotated[str, Doc(...)], " in text
    assert "mode: Literal['a', 'b', 'c', 'd', 'e', ...]='a', " in text
    # A short list stays whole, and so does a type written as a string.
    assert "tag: Literal['x', 'y', 'z', 'w', 'v']='x', " in text
    assert "graph: 'Mapping[str, ConjunctiveGraph]'=None) -> None\n" in text


def test_an_optional_parameter_is_written_as_typescript_writes_it() -> None:
    text = pack_of(
        "opt.py",
        "def find(key: str | None = None, *, limit: Optional[int] = None, x: int | None = 3):\n"
        "    pass\n",
    )
    assert "\n1+1 find(key?: str, *, limit?: int, x: int | None=3)\n" in text


def test_a_sibling_with_the_signature_of_the_one_above_it_is_its_name_and_a_caret() -> None:
    text = pack_of(
        "s.py",
        "class S:\n"
        "    def upper(self, width: int) -> str:\n        return ''\n"
        "    def lower(self, width: int) -> str:\n        return ''\n"
        "    async def title(self, width: int) -> str:\n        return ''\n",
    )
    assert "\n 2+1 upper(width: int) -> str\n 4+1 lower ^\n" in text
    # ``async`` makes it another signature.
    assert "\n 6+1 async title(width: int) -> str\n" in text


def test_a_label_repeated_across_classes_is_one_dictionary_entry() -> None:
    source = "".join(
        f"class {name}:\n    async def aclose(self) -> None:\n        pass\n\n"
        for name in ("Reader", "Writer", "Socket", "Pipe")
    )
    text = pack_of("streams.py", source)
    ident = words_of(text)["async aclose() -> None"]
    assert text.count(f" {ident}\n") == 4


def test_an_annotation_repeated_under_other_parameter_names_goes_to_the_dictionary() -> None:
    annotation = "Mapping[str, Callable[[Request], Awaitable[Response]]]"
    source = "".join(
        f"def handle_{n}({name}: {annotation}) -> None:\n    pass\n\n"
        for n, name in enumerate(("routes", "hooks", "fallbacks", "middleware"))
    )
    text = pack_of("web.py", source)
    ident = words_of(text)[annotation]
    assert f" handle_0(routes: {ident}) -> None\n" in text
    assert text.count(annotation) == 1


def test_go_standard_library_imports_are_left_out_like_pythons() -> None:
    text = pack_of(
        "main.go",
        'package main\n\nimport (\n\t"fmt"\n\t"net/http"\n\t"github.com/acme/kit/log"\n)\n\n'
        "func main() {\n\tfmt.Println(http.StatusOK)\n\tlog.Info()\n}\n",
    )
    assert "\n4+2 imports github.com/acme/kit/log\n" in text


def test_relative_imports_of_one_package_fold_together() -> None:
    text = pack_of(
        "pkg/mod.py",
        "from . import _types\nfrom ._utils import x\nfrom . import _models\n"
        "from ..base import y\nfrom ..base.sub import z\n\n\ndef f() -> None:\n    pass\n",
    )
    assert "\n1+4 imports .{_types,_utils,_models},..base.sub\n" in text  # ..base: said by .sub


def test_a_span_is_its_start_and_how_many_lines_follow() -> None:
    source = "def one() -> int:\n    return 1\n\n\ndef two() -> int:\n    a = 1\n    return a\n"
    text = pack_of("m.py", source)
    assert "\n1+1 one() -> int\n5+2 two ^\n" in text
    digest = hashlib.sha256(source.encode()).hexdigest()[:8]
    assert pack_evidence(text) == {
        "n0": f"m.py:1-7#{digest}",
        "n1": f"m.py:1-2#{digest}",
        "n2": f"m.py:5-7#{digest}",
    }


def test_a_path_with_spaces_reads_back_whole() -> None:
    source = "def run() -> None:\n    pass\n"
    text = pack_of("my tools/run it.py", source)
    digest = hashlib.sha256(source.encode()).hexdigest()[:8]
    assert pack_evidence(text)["n1"] == f"my tools/run it.py:1-2#{digest}"


STR_SUBCLASS = """class Markup(str):
    def upper(self) -> 'Markup':
        return self

    def lower(self) -> 'Markup':
        return self

    def partition(self, sep: str) -> tuple[str, str, str]:
        return super().partition(sep)

    def unescape(self, strict: bool = False) -> str:
        return str(self)

    def title(self) -> 'Markup':
        return self
"""


def test_overrides_of_a_builtin_base_are_named_once_by_return_type_in_one_claim() -> None:
    # Their parameters are the builtin's: only the name and what they return say something.
    text = pack_of("markup.py", STR_SUBCLASS)
    markup = words_of(text)["'Markup'"]
    assert (
        f"\n 2+7 overrides str: upper,lower -> {markup}; partition -> tuple[str, str, str]\n"
        in (text)
    )
    # A method of the class's own keeps its signature and ends the run; ``^`` never refers
    # past an override line.
    assert "\n 11+1 unescape(strict: bool=False) -> str\n 14+1 overrides str: title" in text
    digest = hashlib.sha256(STR_SUBCLASS.encode()).hexdigest()[:8]
    assert f"markup.py:2-9#{digest}" in pack_evidence(text).values()
