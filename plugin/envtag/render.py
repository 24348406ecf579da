"""Human-readable renderings of a Report: terminal text and a Markdown table (job summaries)."""

from __future__ import annotations

import re

from .model import Report, counted

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def visible(text: str) -> str:
    """Control characters shown, not obeyed: a file name with a line break cannot start a workflow command
    (``::add-mask::``) in a CI log, nor an escape sequence rewrite a terminal."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text) if _CONTROL.search(text) else text


def _where(path: str) -> str:
    return "(repo root)" if path == "." else path + "/"


def human(report: Report) -> str:
    """Short and useful: what was found, where, how many tasks, how to load it, then problems."""
    lines: list[str] = []
    if report.roots:
        lines.append(f"{report.source}: {len(report.roots)} taskset root{'s' if len(report.roots) != 1 else ''}")
        for root in report.roots:
            who = [f"{t} (native)" for t in root.native] + list(root.readers)
            lines.append(f"  {_where(root.path)}  {counted(root.tasks, root.unit)}  [{root.layout}]  "
                         f"loads with: {', '.join(who) or 'nobody'}")
            for sentence in root.evidence:
                lines.append(f"      evidence: {sentence}")
            for tag, command in root.load_commands.items():
                lines.append(f"      {tag}: {command}")
            for tag, why in root.refused.items():
                lines.append(f"      not read by {tag}: {why}")
    else:
        lines.append(f"{report.source}: no RL-environment taskset found")
    if report.tags:
        lines.append(f"Tags: {', '.join(report.tags)}")
    if report.problems:
        lines.append(f"Problems ({len(report.problems)}):")
        lines.extend(_grouped_problems(report))
    return "\n".join(visible(line) for line in lines)


def _grouped_problems(report: Report, shown: int = 3) -> list[str]:
    """One line per problem, but a message shared by many paths (1,487 legacy tasks) is shown a few
    times and counted; ``--json`` keeps every problem."""
    by_message: dict[str, list] = {}
    for problem in report.problems:
        by_message.setdefault(problem.message, []).append(problem)
    lines = []
    for message, problems in by_message.items():
        for problem in problems[:shown] if len(problems) > shown + 1 else problems:
            where = problem.path + (f":{problem.line}" if problem.line else "")
            lines.append(f"  {where}: {message}")
        if len(problems) > shown + 1:
            lines.append(f"  ... and {len(problems) - shown} more with the same problem (--json lists all)")
    return lines


def _cell(text: str) -> str:
    return visible(text).replace("|", "\\|").replace("`", "'")


def markdown(report: Report) -> str:
    """A GitHub-flavoured Markdown summary: frameworks, roots, task counts, load commands, problems."""
    out = [f"### envtag: {_cell(report.source)}", ""]
    if report.tags:
        out.append("Tags: " + ", ".join(f"`{t}`" for t in report.tags))
        out.append("")
        out.append("| framework | native | root | count | load command |")
        out.append("|---|---|---|---|---|")
        for framework in report.frameworks:
            for root in framework.roots or ["-"]:
                entry = next((r for r in report.roots if r.path == root and framework.tag in
                              (*r.native, *r.readers)), None)
                count = counted(entry.tasks, entry.unit) if entry else "0"
                command = framework.load_commands.get(root, "")
                out.append(f"| {framework.tag} | {'yes' if framework.native else 'reader'} | "
                           f"`{_cell(root)}` | {count} | `{_cell(command)}` |")
    else:
        out.append("No RL-environment taskset found.")
    if report.problems:
        out += ["", f"**Problems ({len(report.problems)})**", "", "| path | line | problem |", "|---|---|---|"]
        for problem in report.problems:
            out.append(f"| `{_cell(problem.path)}` | {problem.line or ''} | {_cell(problem.message)} |")
    return "\n".join(out) + "\n"
