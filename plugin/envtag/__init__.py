"""envtag: detect RL-environment taskset layouts and tag Hugging Face Hub dataset cards.

The Hub-facing functions import huggingface_hub lazily, so a local ``envtag tag --check`` stays fast.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (12 ms) at CLI start

__version__ = "0.1.0"

__all__ = [
    "CardError",
    "Detection",
    "Framework",
    "Layout",
    "NearMiss",
    "Problem",
    "Report",
    "Task",
    "TreeError",
    "apply_tags",
    "card_operation",
    "detect",
    "hookimpl",
    "push_to_hub",
    "tag_hub_repo",
]

# name -> module: imported on first use, so that importing envtag (and starting the CLI) stays cheap
_LAZY = {
    "hookimpl": "hookspecs",
    **dict.fromkeys(("Detection", "Framework", "Layout", "NearMiss", "Problem", "Report", "Task"), "model"),
    "detect": "engine",
    "apply_tags": "card",
    "CardError": "card",
    "TreeError": "tree",
    "push_to_hub": "hub",
    "tag_hub_repo": "hub",
    "card_operation": "hub",
}

if TYPE_CHECKING:
    from typing import Any

    from .card import CardError, apply_tags
    from .engine import detect
    from .hookspecs import hookimpl
    from .hub import card_operation, push_to_hub, tag_hub_repo
    from .model import Detection, Framework, Layout, NearMiss, Problem, Report, Task
    from .tree import TreeError


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'envtag' has no attribute {name!r}")
