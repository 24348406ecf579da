"""Whether the envtag command (or the Action) owns this process.

A program that calls envtag as a library keeps its process as it was. The command owns its process, so it
may fork workers to judge a big taskset (parallel.py) and make huggingface_hub's shared session envtag's,
timeouts and rate gate included, for every session huggingface_hub builds (hubclient.py).
"""

from __future__ import annotations

_owned = False


def own(owned: bool = True) -> bool:
    """Take the process over (or give it back); returns the previous setting, for a caller that puts it back."""
    global _owned
    previous, _owned = _owned, owned
    return previous


def owned() -> bool:
    """Whether the envtag command owns this process (``own`` was called)."""
    return _owned
