"""OpenEnv: environment folders that pass the structure check ``openenv push`` runs."""

from __future__ import annotations

import shlex

from ..hookspecs import hookimpl
from ..model import Detection, Framework, Layout, Problem, Task
from ..parsing import ParseFailure, load_yaml, short_repr
from ..sources import hub_repo
from ..tree import Tree, join, parent
from .harbor import LAYOUT as HARBOR_LAYOUT

LAYOUT = "openenv-env"
REQUIRED_FILES = ("__init__.py", "client.py", "README.md", "pyproject.toml")
SERVER_FILES = ("server/Dockerfile", "server/__init__.py", "server/app.py")
HARBOR_MAX_DEPTH = 6  # openenv.harbor.tasks.resolve_task_dirs searches this deep below tasks/


def env_root(env_dir: str) -> str:
    return "." if env_dir == "." else parent(env_dir)


def missing_files(tree: Tree, d: str) -> list[str]:
    """The files validate_env_structure requires that ``d`` lacks."""
    missing = [name for name in REQUIRED_FILES if not tree.is_file(join(d, name))]
    if not tree.is_file(join(d, "Dockerfile")):
        lacking = [name for name in SERVER_FILES if not tree.is_file(join(d, name))]
        if lacking:
            missing.append("Dockerfile (or " + " + ".join(SERVER_FILES) + ")")
    return missing


def detect(tree: Tree) -> Detection:
    found = Detection()
    manifests = tree.named("openenv.yaml")
    tree.prefetch(manifests)
    for path in manifests:
        d = parent(path)
        if tree.is_file(join(d, "task.toml")):
            continue  # the Harbor detector reports the ambiguous folder once
        try:
            manifest = load_yaml(tree, path, LAYOUT)
        except ParseFailure as exc:
            found.problems.append(exc.problem)
            continue
        if not isinstance(manifest, dict) or not manifest.get("name"):
            found.problems.append(Problem(path, "openenv.yaml is not a mapping with a name", layout=LAYOUT,
                                          framework="openenv"))
            continue
        if "variables" in manifest and not isinstance(manifest["variables"], dict):
            found.problems.append(Problem(path, "openenv.yaml variables must be a mapping (openenv push refuses it)",
                                          layout=LAYOUT, framework="openenv"))
            continue
        missing = missing_files(tree, d)
        if missing:
            found.problems.append(Problem(
                path, "OpenEnv manifest but the environment lacks " + ", ".join(missing) + "; not tagged",
                layout=LAYOUT, framework="openenv"))
            continue
        name = manifest["name"]  # any truthy value passes; str() of a large one would cost its whole size
        facts = {"name": name if isinstance(name, str) else short_repr(name),
                 "spec_version": manifest.get("spec_version")}
        found.tasks.append(Task(path=d, root=env_root(d), facts=facts))
    for path in tree.named("openenv.yml"):
        found.problems.append(Problem(path, "openenv.yml has the wrong extension: OpenEnv reads openenv.yaml",
                                      layout=LAYOUT, framework="openenv"))
    return found


def reads_harbor(task: Task, tasks: list[Task]) -> str | None:
    """openenv.harbor.tasks.resolve_task_dirs: a Hub dataset gives it only ``tasks/**``. When a direct
    child of tasks/ is a task it takes the direct children only; else it searches 6 levels deep."""
    parts = task.path.split("/")
    if parts[0] != "tasks" or len(parts) < 2:
        return "not under tasks/ (OpenEnv's Harbor loader only downloads tasks/**)"
    if len(parts) - 1 > HARBOR_MAX_DEPTH:
        return f"deeper than {HARBOR_MAX_DEPTH} levels below tasks/"
    if len(parts) > 2 and _tasks_has_direct_tasks(tasks):
        return "nested below tasks/ while tasks/ has tasks of its own (OpenEnv then reads only those)"
    return None


_direct_cache: dict[str, object] = {"tasks": None, "value": False}


def _tasks_has_direct_tasks(tasks: list[Task]) -> bool:
    """Whether some task sits directly in tasks/; computed once per task list (the engine passes the same
    list for every task of a layout), so judging 100,000 tasks stays linear."""
    if _direct_cache["tasks"] is not tasks:
        _direct_cache["value"] = any(t.path.count("/") == 1 and t.path.startswith("tasks/") for t in tasks)
        _direct_cache["tasks"] = tasks
    return bool(_direct_cache["value"])


def load_command(root: str, source: str) -> str:
    hub = hub_repo(source)
    if hub is not None:
        return f"python -c 'from openenv import AutoEnv; AutoEnv.from_env(\"{hub[1]}\")'"
    return f"openenv build {shlex.quote(root)}  # one folder per environment; publish: openenv push"


def load_harbor_command(root: str, source: str) -> str:
    hub = hub_repo(source)
    dataset = hub[1] if hub is not None else root
    return f"openenv harbor rollout --llm-url $LLM_URL --dataset {shlex.quote(dataset)}"


@hookimpl
def register_layouts(register):
    register(Layout(LAYOUT, detect, "OpenEnv environments (openenv.yaml + client, server, Dockerfile)"))


@hookimpl
def register_frameworks(register):
    register(Framework(
        tag="openenv",
        native=(LAYOUT,),
        readers={HARBOR_LAYOUT: reads_harbor},
        reader_commands={HARBOR_LAYOUT: load_harbor_command},
        description="OpenEnv: agentic execution environments behind a Gym-style API",
        url="https://github.com/meta-pytorch/OpenEnv",
        load_command=load_command,
    ))
