"""The dependency direction of docs/architecture.md, checked by walking every import with ``ast``.

Every ``import`` counts: at module level, inside functions and under ``TYPE_CHECKING``. A package
may import only the packages listed for it below, only their public modules (no ``_private``
module or name crosses a package boundary), and nothing of ours is loaded by a string
(``importlib.import_module``, ``__import__`` or a ``"package.module:attr"`` spec).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

ALLOWED: dict[str, frozenset[str]] = {
    "airhttp": frozenset(),
    "airstore": frozenset(),
    "airmeter": frozenset({"airstore", "airhttp"}),
    "aircore": frozenset({"airmeter", "airstore", "airhttp"}),
    "dashboard": frozenset({"airmeter", "airstore", "airhttp"}),
    "airgateway": frozenset({"aircore", "airmeter", "airstore", "airhttp"}),
    "aircli": frozenset({"aircore", "airmeter", "airstore", "airhttp", "dashboard", "airgateway"}),
}
OURS = frozenset(ALLOWED)

# Files that load a *user's* module by name (``air serve TARGET``), which is their job.
USER_MODULE_LOADERS = frozenset({"aircli/serve.py", "aircli/_scaffold_templates.py"})

_SPEC = re.compile(rf"^({'|'.join(sorted(OURS))})(\.[A-Za-z_][\w.]*)?:[A-Za-z_]\w*$")
_DOTTED = re.compile(rf"^({'|'.join(sorted(OURS))})(\.[A-Za-z_]\w*)+$")


def _is_our_module(name: str) -> bool:
    """Whether ``name`` (``"airmeter.otel"``) is a module or package of this repository."""
    path = ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _package_files() -> Iterator[tuple[str, Path]]:
    for package in sorted(OURS):
        folder = ROOT / package
        if folder.is_dir():
            for path in sorted(folder.rglob("*.py")):
                yield package, path


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _module_of(path: Path, root: Path) -> list[str]:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path, root: Path = ROOT) -> Iterator[tuple[int, str, list[str]]]:
    """``(line, imported module, imported names)`` for every import statement in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    here = _module_of(path, root)
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = here if is_package else here[:-1]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            if module:
                yield node.lineno, module, [a.name for a in node.names]
            else:  # `from .. import airstore` above the packages: each name is a package
                for alias in node.names:
                    yield node.lineno, alias.name, []


def _edges() -> Iterator[tuple[str, str, int, str, list[str]]]:
    for package, path in _package_files():
        for line, module, names in _imports(path):
            top = module.split(".")[0]
            if top in OURS and top != package:
                yield package, _rel(path), line, module, names


def test_every_import_follows_the_direction() -> None:
    wrong = [
        f"{where}:{line} {package} -> {module}"
        for package, where, line, module, _ in _edges()
        if module.split(".")[0] not in ALLOWED[package]
    ]
    assert wrong == []


def test_no_private_module_or_name_crosses_a_package_boundary() -> None:
    private = [
        f"{where}:{line} imports {module} {names}"
        for _, where, line, module, names in _edges()
        if any(part.startswith("_") for part in module.split(".")[1:])
        or any(n.startswith("_") for n in names)
    ]
    assert private == []


def _string_loads(path: Path) -> Iterator[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0] if node.args else None
            if name in ("import_module", "__import__") and not (
                isinstance(first, ast.Name | ast.Attribute)  # a third-party name held elsewhere
            ):
                yield f"{_rel(path)}:{node.lineno} calls {name}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if _SPEC.match(text) or (_DOTTED.match(text) and _is_our_module(text)):
                yield f"{_rel(path)}:{node.lineno} names {text!r}"


# Debt being paid off: each entry goes when its module stops loading by name. The test fails
# both on a new string load and on an entry that no longer exists, so the list only shrinks.
KNOWN_STRING_LOADS: list[str] = []


def test_no_package_of_ours_is_loaded_by_a_string() -> None:
    found = [
        hit
        for _, path in _package_files()
        if _rel(path) not in USER_MODULE_LOADERS
        for hit in _string_loads(path)
    ]
    assert found == KNOWN_STRING_LOADS


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from airstore._validate import check_key\n", "airstore._validate"),
        ("def f():\n    from dashboard import server\n", "dashboard"),
        ("if TYPE_CHECKING:\n    import aircore.server\n", "aircore.server"),
        ("from .guards import token_ok\n", "airmeter.guards"),
        ("from .. import airstore\n", "airstore"),
    ],
)
def test_the_walker_sees_private_function_level_and_relative_imports(
    tmp_path: Path, source: str, expected: str
) -> None:
    # a walker that missed any of these would let the direction tests above pass wrongly
    path = tmp_path / "airmeter" / "mod.py"
    path.parent.mkdir()
    path.write_text(source)
    assert [module for _, module, _ in _imports(path, tmp_path)] == [expected]


def test_a_string_spec_is_recognized() -> None:
    assert _DOTTED.match("airmeter.otel")
    assert _is_our_module("airmeter.otel")
    assert not _is_our_module("airmeter.no_such_module")
    assert _SPEC.match("airmeter:create_meter_hook")
    assert _SPEC.match("airmeter.metrics_app:server_metrics_app")
    assert not _SPEC.match("air:")
    assert not _SPEC.match("http://127.0.0.1:4000")


# ---- import circles inside aircore ---------------------------------------------------------
# A circle is a set of modules that import each other in a loop, counting every import (module
# level, inside functions, under TYPE_CHECKING). ``from package import name`` is an edge to the
# submodule ``package.name`` when there is one, else to the package itself.


def _module_graph(package: str, root: Path = ROOT) -> dict[str, set[str]]:
    files = {
        ".".join(_module_of(path, root)): path for path in sorted((root / package).rglob("*.py"))
    }
    # a compiled module (``airstore._speedups``, typed by its ``.pyi``) imports nothing of ours;
    # it is a module of its own, not its package
    compiled = {
        ".".join(_module_of(stub, root))
        for stub in (root / package).rglob("*.pyi")
        if not stub.with_suffix(".py").is_file()
    }
    graph: dict[str, set[str]] = {name: set() for name in [*files, *compiled]}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for _, module, names in _imports_of(node, path, root):
                targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in graph]
                for target in targets or [module]:
                    if target in graph and target != name:
                        graph[name].add(target)
    return graph


def _imports_of(node: ast.stmt, path: Path, root: Path) -> Iterator[tuple[int, str, list[str]]]:
    """The imports of one statement, as :func:`_imports` reads them (relative ones resolved)."""
    tree = ast.Module(body=[node], type_ignores=[])
    here = _module_of(path, root)
    is_package = path.name == "__init__.py"
    for stmt in ast.walk(tree):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                yield stmt.lineno, alias.name, []
        elif isinstance(stmt, ast.ImportFrom):
            if stmt.level:
                base = here if is_package else here[:-1]
                base = base[: len(base) - (stmt.level - 1)]
                module = ".".join([*base, *([stmt.module] if stmt.module else [])])
            else:
                module = stmt.module or ""
            yield stmt.lineno, module, [a.name for a in stmt.names]


def _circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def _layer(module: str) -> str | None:
    if module == "aircore.server":
        return "server"
    for layer in ("protocol", "transports"):
        if module.startswith(f"aircore.{layer}."):
            return layer
    return None


def test_no_import_circle_joins_aircores_server_protocol_and_transports() -> None:
    joined = [
        sorted(circle)
        for circle in _circles(_module_graph("aircore"))
        if "aircore.server" in circle or len({_layer(m) for m in circle} - {None}) > 1
    ]
    assert joined == []


def test_the_circle_finder_counts_function_level_and_type_checking_imports(
    tmp_path: Path,
) -> None:
    # a finder that missed either kind of import would let the test above pass wrongly
    pkg = tmp_path / "aircore"
    (pkg / "transports").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "transports" / "__init__.py").write_text("")
    (pkg / "server.py").write_text("def run():\n    from aircore.transports import http\n")
    (pkg / "transports" / "http.py").write_text(
        "if TYPE_CHECKING:\n    from aircore.server import AirServer\n"
    )
    (pkg / "alone.py").write_text("from aircore import server\n")
    circles = _circles(_module_graph("aircore", tmp_path))
    assert circles == [{"aircore.server", "aircore.transports.http"}]


# Circles inside a package that are kept, each for the reason written beside its import. Any
# other circle, in any package, fails the test below (a circle that shrank still passes).
DEFENDED_CIRCLES: dict[frozenset[str], str] = {
    frozenset({"aircore.context", "aircore.signature", "aircore.tool"}): (
        "ToolContext.tool names its Tool's type under TYPE_CHECKING only; signature.py needs "
        "the ToolContext class to find a handler's context parameter"
    ),
}


def test_every_import_circle_in_our_packages_is_one_we_defend() -> None:
    found = [
        sorted(circle)
        for package in sorted(OURS)
        for circle in _circles(_module_graph(package))
        if not any(circle <= defended for defended in DEFENDED_CIRCLES)
    ]
    assert found == []


def test_a_compiled_module_is_not_read_as_its_package(tmp_path: Path) -> None:
    pkg = tmp_path / "airstore"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from airstore.memory import MemoryStore\n")
    (pkg / "memory.py").write_text("def f():\n    from airstore import _speedups\n")
    (pkg / "_speedups.pyi").write_text("def set_item() -> None: ...\n")
    graph = _module_graph("airstore", tmp_path)
    assert graph["airstore.memory"] == {"airstore._speedups"}
    assert _circles(graph) == []


# ---- the server chooses no store -----------------------------------------------------------
# Which store a server uses when it names none (the default location, or memory) and telling
# the user so are aircore.storage's, called by the composition root and as the server starts;
# AirServer itself only holds what it was given.

_STORE_CHOICE = frozenset({"resolve_store_location", "create_storage", "MemoryStore"})


def _names_used(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    names |= {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    return names


def test_the_server_neither_chooses_a_default_store_nor_prints() -> None:
    used = _names_used(ROOT / "aircore" / "server.py")
    assert used & (_STORE_CHOICE | {"print", "stderr"}) == set()


def test_only_aircore_storage_chooses_a_servers_default_store_in_aircore() -> None:
    choosing = sorted(
        _rel(path)
        for path in sorted((ROOT / "aircore").rglob("*.py"))
        if "resolve_store_location" in _names_used(path)
    )
    assert choosing == ["aircore/storage.py"]


def test_no_import_circle_joins_the_meter_and_its_store_sink() -> None:
    # the meter holds persisting sinks through airmeter.types.PersistingSink and builds its
    # StoreSink; the store sink takes its default writer id from airmeter.instance, not back
    # from the meter
    joined = [
        sorted(circle)
        for circle in _circles(_module_graph("airmeter"))
        if {"airmeter.meter", "airmeter.store_sink"} & circle
    ]
    assert joined == []
