"""Find the Python code blocks of README.md and docs/*.md, and run one as its own program.

A block is a fenced ```` ```python ```` block. A block whose first line starts with
:data:`FRAGMENT_MARK` is a deliberate fragment: it must still compile, but it is not run.
Every other block runs as a program of its own (top-level ``await`` allowed) in a fresh, empty
working directory, as ``__main__`` with stdin closed: a sample that ends in
``if __name__ == "__main__": server.run()`` serves stdio until the closed stdin ends it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FRAGMENT_MARK", "RUNNER", "DocBlock", "compile_block", "doc_blocks", "doc_files"]

ROOT = Path(__file__).resolve().parents[2]

FRAGMENT_MARK = "# fragment: not run"
"""The first line of a block that is a fragment on purpose (it is compiled, not run)."""

_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")

# The program that runs one block: `python -c RUNNER FILE`.
RUNNER = """\
import ast, asyncio, inspect, sys
path = sys.argv[1]
with open(path, encoding="utf-8") as f:
    source = f.read()
code = compile(source, path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
scope = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
if code.co_flags & inspect.CO_COROUTINE:
    asyncio.run(eval(code, scope))
else:
    exec(code, scope)
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class DocBlock:
    """One fenced Python block: where it is and what it says."""

    path: Path
    line: int
    source: str

    @property
    def name(self) -> str:
        """``docs/storage.md:11`` (the line of the opening fence)."""
        where = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{where.as_posix()}:{self.line}"

    @property
    def is_fragment(self) -> bool:
        """Whether the block is marked as a deliberate fragment."""
        first = self.source.lstrip("\n").split("\n", 1)[0]
        return first.strip().startswith(FRAGMENT_MARK)


def _closes(match: re.Match[str] | None, fence: str) -> bool:
    """Whether a fence line closes a block opened by ``fence`` (same character, at least as
    long, no info string)."""
    if match is None or match["info"].strip():
        return False
    return match["fence"][0] == fence[0] and len(match["fence"]) >= len(fence)


def doc_files() -> list[Path]:
    """README.md and every docs/*.md, in a stable order."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def doc_blocks(path: Path) -> list[DocBlock]:
    """Every ```` ```python ```` (or ``py``) block of ``path``, in order."""
    blocks: list[DocBlock] = []
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        language = opening["info"].strip().split(" ", 1)[0].lower() if opening["info"] else ""
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            if _closes(_FENCE.match(lines[j]), fence):
                break
            body.append(lines[j][indent:] if lines[j][:indent].isspace() else lines[j])
            j += 1
        if language in ("python", "py"):
            blocks.append(DocBlock(path=path, line=i + 1, source="\n".join(body) + "\n"))
        i = j + 1
    return blocks


def compile_block(block: DocBlock) -> None:
    """Compile ``block`` the way the runner does (top-level ``await`` allowed).

    Raises:
        SyntaxError: the block is not valid Python.
    """
    compile(block.source, block.name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


RELEASED_MARKER = "Once released"


def readme_install_section() -> str:
    """The README's "## Install" section, up to the next heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Install\n")
    return text[start : text.index("\n## ", start + 1)]


def readme_install_commands() -> list[str]:
    """The ``pip install`` commands of the README's install section a user runs today (those
    before the "once released" line), in order."""
    section = readme_install_section().split(RELEASED_MARKER, 1)[0]
    return [
        line.split("#", 1)[0].strip()
        for line in section.splitlines()
        if line.strip().startswith("pip install")
    ]
