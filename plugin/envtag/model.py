"""The data that flows between detectors, frameworks and the report."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .tree import Tree

RL_TAG = "rl-environment"


@dataclass
class Problem:
    """A near-miss or an error found while inspecting: something almost valid, and why it is not."""

    path: str
    message: str
    line: int | None = None
    layout: str | None = None
    framework: str | None = None
    # True when the file could not be judged at all (a safety limit: size, nesting, YAML aliases; a failed
    # read): the layout's verdict is then incomplete, and --prune keeps the tags that depend on it
    undecided: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"path": self.path, "message": self.message}
        if self.line is not None:
            data["line"] = self.line
        if self.layout:
            data["layout"] = self.layout
        if self.framework:
            data["framework"] = self.framework
        if self.undecided:
            data["undecided"] = True
        return data


@dataclass
class Task:
    """One unit a detector found: a task directory, or a data file holding ``count`` tasks.

    ``facts`` carries what readers need to judge the task without re-reading it
    (for Harbor: docker_image, multi_step, compose main service...).
    """

    path: str
    root: str
    count: int = 1
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class Detection:
    """What one layout detector found in a tree."""

    tasks: list[Task] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # root -> short sentences of extra evidence (registry.json, dataset.toml, config YAML...)
    evidence: dict[str, list[str]] = field(default_factory=dict)

    def add_evidence(self, root: str, sentence: str) -> None:
        self.evidence.setdefault(root, []).append(sentence)


class NearMiss(str):
    """A reader's refusal worth reporting even when it refuses every task of a root: the framework could
    load them after one fix (Verifiers and a missing registry.json)."""


# A reader check: can this framework load ``task`` (of another framework's layout)? ``tasks`` holds
# every task of that layout in the repo, for loaders that look at siblings. None when it can, else why not.
ReaderCheck = Callable[[Task, "list[Task]"], "str | None"]


@dataclass
class Layout:
    """An on-disk format and the detector that recognises it."""

    name: str
    detect: Callable[[Tree], Detection]
    description: str = ""


@dataclass
class Framework:
    """A runtime with a Hub tag, the layouts it loads natively, and those it can also read."""

    tag: str
    native: tuple[str, ...]
    description: str = ""
    url: str = ""
    readers: Mapping[str, ReaderCheck] = field(default_factory=dict)
    # (root, source) -> the command or snippet that loads that root with this framework
    load_command: Callable[[str, str], str] | None = None
    # layout -> the command for roots of another layout it reads (default: load_command)
    reader_commands: Mapping[str, Callable[[str, str], str]] = field(default_factory=dict)

    def command_for(self, layout: str, root: str, source: str) -> str | None:
        command = self.reader_commands.get(layout, self.load_command)
        return command(root, source) if command is not None else None


@dataclass
class RootReport:
    """One taskset root: where it is, which layout, how many tasks, who can load it."""

    path: str
    layout: str
    tasks: int
    units: int
    native: list[str] = field(default_factory=list)
    readers: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    sample: list[str] = field(default_factory=list)
    load_commands: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "layout": self.layout,
            "tasks": self.tasks,
            "units": self.units,
            "native": self.native,
            "readers": self.readers,
            "evidence": self.evidence,
            "sample": self.sample,
            "load_commands": self.load_commands,
        }


@dataclass
class FrameworkReport:
    """A framework that can load at least one root: what gets tagged."""

    tag: str
    native: bool
    roots: list[str]
    tasks: int
    load_commands: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "native": self.native,
            "roots": self.roots,
            "tasks": self.tasks,
            "load_commands": self.load_commands,
        }


@dataclass
class Report:
    """The result of ``envtag.detect``: tags to write, frameworks, roots and problems."""

    source: str
    frameworks: list[FrameworkReport] = field(default_factory=list)
    roots: list[RootReport] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    native_only: bool = False
    known_tags: list[str] = field(default_factory=list)
    # framework tag -> why its verdict is incomplete (a detector that raised, a file past a safety limit,
    # paths that could not be read): such a tag is never pruned
    undecided: dict[str, str] = field(default_factory=dict)
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (path, why) the file set leaves out

    @property
    def tags(self) -> list[str]:
        if not self.frameworks:
            return []
        return [RL_TAG] + [f.tag for f in self.frameworks]

    def framework(self, tag: str) -> FrameworkReport | None:
        return next((f for f in self.frameworks if f.tag == tag), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "tags": self.tags,
            "frameworks": [f.to_json() for f in self.frameworks],
            "roots": [r.to_json() for r in self.roots],
            "problems": [p.to_json() for p in self.problems],
            "native_only": self.native_only,
            "undecided": self.undecided,
            "left_out": [{"path": path, "reason": reason} for path, reason in self.left_out],
        }


def unique(items: Iterable[str]) -> list[str]:
    """Items in first-seen order without repeats."""
    return list(dict.fromkeys(items))
