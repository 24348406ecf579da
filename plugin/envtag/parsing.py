"""Parsing marker files safely: capped reads, errors that name the file and the line."""

from __future__ import annotations

import functools
import re
import sys
from typing import Any

from .model import Problem
from .tree import FileTooLarge, Tree

try:  # a compiled parser, 15x faster than tomllib on task.toml files; tomllib decides on errors
    from rtoml import loads as _fast_toml_loads
except ImportError:  # pragma: no cover - platforms without an rtoml wheel
    _fast_toml_loads = None

_TOML_LINE = re.compile(r"at line (\d+)")


class ParseFailure(Exception):
    """A marker file could not be parsed; carries the Problem to report."""

    def __init__(self, problem: Problem):
        super().__init__(problem.message)
        self.problem = problem


def read_text(tree: Tree, path: str, layout: str | None = None) -> str:
    """Read a capped UTF-8 text file, raising ParseFailure with the line of a bad byte."""
    try:
        data = tree.read(path)
    except FileTooLarge as exc:
        raise ParseFailure(Problem(path, str(exc).split(": ", 1)[1], layout=layout)) from None
    except OSError as exc:
        raise ParseFailure(Problem(path, f"cannot read: {exc.strerror or exc}", layout=layout)) from None
    try:
        text = data.decode("utf-8")  # the C codec; "utf-8-sig" goes through a Python-level decoder
        return text[1:] if text.startswith("\ufeff") else text
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ParseFailure(Problem(path, f"not UTF-8 (byte {exc.start})", line=line, layout=layout)) from None


def load_toml(tree: Tree, path: str, layout: str | None = None) -> dict[str, Any]:
    text = read_text(tree, path, layout)
    if _fast_toml_loads is not None:
        try:
            return _fast_toml_loads(text)
        except Exception:  # rtoml refused: let tomllib give the canonical verdict and line
            pass
    if sys.version_info >= (3, 11):  # the reference parser, imported when rtoml is missing or refused
        import tomllib
    else:  # pragma: no cover - exercised on 3.10
        import tomli as tomllib
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = _TOML_LINE.search(str(exc))
        line = int(match.group(1)) if match else None
        message = _TOML_LINE.sub("", str(exc)).replace("()", "").strip().rstrip(",")
        raise ParseFailure(Problem(path, f"invalid TOML: {message}", line=line, layout=layout)) from None


@functools.cache
def _unique_key_loader() -> type:
    """A SafeLoader that refuses duplicate mapping keys instead of silently keeping the last. Built on
    first use: PyYAML costs 20 ms to import, and a Harbor or git-revision run may parse no YAML at all."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        pass

    def construct_mapping(loader: UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False):
        seen: set = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key: let PyYAML raise its own error
                duplicate = False
            if duplicate:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            if not isinstance(key, (list, dict)):
                seen.add(key)
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    return UniqueKeyLoader


def load_yaml(tree: Tree, path: str, layout: str | None = None) -> Any:
    text = read_text(tree, path, layout)
    loader = _unique_key_loader()
    import yaml

    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or str(exc)
        raise ParseFailure(Problem(path, f"invalid YAML: {reason}", line=line, layout=layout)) from None
