"""Every Python block of README.md and docs/*.md runs as it stands (fragments only compile).

Each block is a program of its own in a fresh, empty working directory, so a sample that drifts
from the code, lacks an import or hangs fails ``make test``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.docblocks import (
    FRAGMENT_MARK,
    RUNNER,
    DocBlock,
    compile_block,
    doc_blocks,
    doc_files,
)

BLOCK_TIMEOUT = 90.0
"""Seconds a block may take before it counts as hung (generous: the CI machine is shared)."""

BLOCKS = [block for path in doc_files() for block in doc_blocks(path)]


def _clean_env(home: Path) -> dict[str, str]:
    """The test's environment without anything of ours or OpenTelemetry's, and a private home."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AIR_", "OTEL_", "MCP_")) and k not in ("XDG_DATA_HOME", "HOME")
    }
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / ".local" / "share"), PYTHONUNBUFFERED="1")
    return env


def run_block(block: DocBlock, cwd: Path, *, timeout: float = BLOCK_TIMEOUT) -> tuple[int, str]:
    """Run ``block`` in ``cwd``; return its exit code and its output (stdout + stderr)."""
    script = cwd / "doc_block.py"
    script.write_text(block.source, encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER, str(script)],
        cwd=cwd,
        env=_clean_env(cwd / "home"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        output, _ = proc.communicate()
        return -1, f"{block.name} did not finish within {timeout:g} s (hung?)\n{output}"
    return proc.returncode, output


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_every_doc_block_runs_or_is_a_marked_fragment_that_compiles(
    block: DocBlock, tmp_path: Path
) -> None:
    compile_block(block)
    if block.is_fragment:
        return  # a deliberate fragment: compiling it is the whole check
    code, output = run_block(block, tmp_path)
    assert code == 0, f"{block.name} failed (exit {code}):\n{output}"


def test_the_docs_have_python_blocks_to_run() -> None:
    runnable = [b for b in BLOCKS if not b.is_fragment]
    assert {b.path.name for b in BLOCKS} >= {"README.md"}
    assert len(runnable) > len(BLOCKS) // 2, [b.name for b in BLOCKS if b.is_fragment]


def _doc(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sample.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_extractor_finds_python_blocks_and_skips_other_languages(tmp_path: Path) -> None:
    path = _doc(
        tmp_path,
        "# t\n\n```sh\necho no\n```\n\n```python\nx = 1\n```\n\n"
        "````py\n```python\ninside = True\n```\n````\n\n~~~\nplain\n~~~\n",
    )
    blocks = doc_blocks(path)
    assert [(b.line, b.source) for b in blocks] == [
        (7, "x = 1\n"),
        (11, "```python\ninside = True\n```\n"),
    ]


def test_a_block_marked_as_a_fragment_is_compiled_but_not_run(tmp_path: Path) -> None:
    path = _doc(tmp_path, f"```python\n{FRAGMENT_MARK} (needs a server)\nundefined_name()\n```\n")
    (block,) = doc_blocks(path)
    assert block.is_fragment
    compile_block(block)
    broken = doc_blocks(_doc(tmp_path, f"```python\n{FRAGMENT_MARK}\ndef (:\n```\n"))[0]
    with pytest.raises(SyntaxError):
        compile_block(broken)


def test_a_failing_block_fails_and_top_level_await_runs(tmp_path: Path) -> None:
    ok = doc_blocks(
        _doc(
            tmp_path,
            "```python\nimport asyncio, sys\nawait asyncio.sleep(0)\n"
            "assert __name__ == '__main__' and sys.stdin.read() == ''\nprint('ran')\n```\n",
        )
    )[0]
    code, output = run_block(ok, tmp_path)
    assert (code, output.strip()) == (0, "ran")
    failing = doc_blocks(_doc(tmp_path, "```python\nfrom airstore import no_such_name\n```\n"))[0]
    code, output = run_block(failing, tmp_path)
    assert code == 1
    assert "ImportError" in output


def test_a_block_that_hangs_fails_instead_of_hanging_the_suite(tmp_path: Path) -> None:
    hangs = doc_blocks(_doc(tmp_path, "```python\nimport threading\nthreading.Event().wait()\n```"))
    code, output = run_block(hangs[0], tmp_path, timeout=1.0)
    assert code == -1
    assert "did not finish" in output
