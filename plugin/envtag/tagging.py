"""``envtag tag FOLDER``: open the folder (or a git revision of it), judge it, and plan the edit of its card."""

from __future__ import annotations

import os

from .card import CardPlan, check_card, plan_card, read_tree_card
from .engine import judge, open_source
from .model import Report


def plan_folder(folder: str | os.PathLike, *, native_only: bool | None = None, prune: bool = False,
                rev: str | None = None) -> tuple[Report, CardPlan]:
    """Detect on a folder (or a git revision of it) and plan the edit of its README.md."""
    card_path = os.path.join(os.fspath(folder), "README.md")
    if rev is None:
        check_card(card_path)  # a card that links out or is no regular file stops envtag before the walk
    # at a revision: the card as committed, like every other file; [tool.envtag] skip never leaves the card out
    tree, config = open_source(folder, rev=rev, skip=True)
    with tree:
        before = read_tree_card(tree, card_path)  # read once, as a file of the set (not one git ignores...)
        report = judge(tree, config, native_only=native_only)
    return report, plan_card(before, report, prune=prune, path=card_path)
