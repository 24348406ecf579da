"""OpenEnv: environment folders that pass the structure check ``openenv push`` runs."""

from __future__ import annotations

import shlex

from envtag import (
    Detection,
    Framework,
    Layout,
    ParseFailure,
    Problem,
    Reader,
    Task,
    Tree,
    hookimpl,
    hub_repo,
    join,
    load_yaml,
    parent,
    short_repr,
)

LAYOUT = "openenv-env"
HARBOR_LAYOUT = "harbor-task"  # the Harbor plugin's layout, read through its documented name
REQUIRED_FILES = ("__init__.py", "client.py", "README.md", "pyproject.toml")
SERVER_FILES = ("server/Dockerfile", "server/__init__.py", "server/app.py")
HARBOR_MAX_DEPTH = 6  # openenv.harbor.tasks.resolve_task_dirs searches this deep below tasks/


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
        # each environment is its own unit of publishing: its own root (what `openenv build DIR` takes)
        found.tasks.append(Task(path=d, root=d, facts=facts))
    for path in tree.named("openenv.yml"):
        found.problems.append(Problem(path, "openenv.yml has the wrong extension: OpenEnv reads openenv.yaml",
                                      layout=LAYOUT, framework="openenv"))
    return found


def reads_harbor(tasks: list[Task]) -> list[str | None]:
    """openenv.harbor.tasks.resolve_task_dirs: a Hub dataset gives it only ``tasks/**``. When a direct
    child of tasks/ is a task it takes the direct children only; else it searches 6 levels deep."""
    direct = any(t.path.count("/") == 1 and t.path.startswith("tasks/") for t in tasks)
    return [_harbor_verdict(task.path.split("/"), direct) for task in tasks]


def _harbor_verdict(parts: list[str], tasks_has_direct_tasks: bool) -> str | None:
    if parts[0] != "tasks" or len(parts) < 2:
        return "not under tasks/ (OpenEnv's Harbor loader only downloads tasks/**)"
    if len(parts) - 1 > HARBOR_MAX_DEPTH:
        return f"deeper than {HARBOR_MAX_DEPTH} levels below tasks/"
    if len(parts) > 2 and tasks_has_direct_tasks:
        return "nested below tasks/ while tasks/ has tasks of its own (OpenEnv then reads only those)"
    return None


def load_command(root: str, source: str) -> str:
    """The environment folder ``root``: built locally, or from the Hub (a Space holds one at its root)."""
    hub = hub_repo(source)
    if hub is None:  # `openenv build .` names the image "" and fails (openenv 0.10): the folder is the default
        return "openenv build" if root == "." else f"openenv build {shlex.quote(root)}"
    repo_type, repo_id = hub
    if root == ".":
        return f"python -c 'from openenv import AutoEnv; AutoEnv.from_env(\"{repo_id}\")'"
    local = shlex.quote(f"{repo_id}/{root}")
    return (f"hf download {repo_id} --repo-type {repo_type} --include {shlex.quote(root + '/*')} "
            f"--local-dir {shlex.quote(repo_id)} && openenv build {local}")


def load_harbor_command(root: str, source: str) -> str:
    hub = hub_repo(source)
    dataset = hub[1] if hub is not None else root
    return f"openenv harbor rollout --llm-url $LLM_URL --dataset {shlex.quote(dataset)}"


@hookimpl
def register_layouts(register):
    register(Layout(LAYOUT, detect, "OpenEnv environments (openenv.yaml + client, server, Dockerfile)",
                    unit="environments", facts={"name": "str: the manifest's name",
                                                "spec_version": "the manifest's spec_version, or None"}))


@hookimpl
def register_frameworks(register):
    register(Framework(
        tag="openenv",
        native=(LAYOUT,),
        readers={HARBOR_LAYOUT: Reader(reads_harbor, load_harbor_command)},
        description="OpenEnv: agentic execution environments behind a Gym-style API",
        url="https://github.com/meta-pytorch/OpenEnv",
        load_command=load_command,
    ))
