"""Imports point one way (docs/architecture.md, "Layers"): every import of seer/,
workloads/, bench/ and examples/, read with ``ast`` (imports inside functions too), must
follow the table below, and seer's layers must not import each other in a cycle.

The table is the one docs/architecture.md shows; a test keeps the two equal.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The directories whose imports are checked (``tests`` may import anything).
CHECKED = ("seer", "workloads", "bench", "examples")

#: seer's top modules that the subpackages build on. Every other top module of seer
#: (``seer.cli``, ``seer.distributed``, ``seer.marl``...) is a front end.
BASE = frozenset({"actions", "blas", "busywork", "compile", "errors", "events", "interrupts",
                  "limits", "model", "platform", "runtime", "serial", "specs", "testing",
                  "trace"})

SEER_LAYERS = ("base", "queues", "interprocess", "sched", "peers", "check", "stpa", "facade",
               "front")

#: Layer -> the other layers its modules may import.
ALLOWED: dict[str, frozenset[str]] = {
    "base": frozenset(),
    "queues": frozenset({"base"}),
    "interprocess": frozenset({"base", "queues"}),
    "sched": frozenset({"base", "queues"}),
    "peers": frozenset({"base", "queues", "sched"}),
    "check": frozenset({"base", "queues", "interprocess", "sched"}),
    "stpa": frozenset({"base", "sched"}),
    "facade": frozenset({"base", "sched", "stpa"}),
    "front": frozenset(SEER_LAYERS) - {"front"},
    "workloads": frozenset(SEER_LAYERS),
    "examples": frozenset({*SEER_LAYERS, "workloads"}),
    "bench": frozenset({*SEER_LAYERS, "workloads", "examples"}),
    "tests": frozenset({*SEER_LAYERS, "workloads", "examples", "bench"}),
}


def layer_of(module: str) -> str:
    """The layer of a module of the project (``"seer.sched.pool"`` -> ``"sched"``)."""
    parts = module.split(".")
    if parts[0] != "seer":
        return parts[0]
    if len(parts) == 1:
        return "facade"  # seer/__init__.py: the names a user imports from seer
    if (ROOT / "seer" / parts[1] / "__init__.py").is_file():
        return parts[1]  # a subpackage; one missing from ALLOWED fails the test
    return "base" if parts[1] in BASE else "front"


@dataclass(frozen=True)
class Edge:
    """``source`` (a file, at ``line``) imports the project's module ``target``."""

    source: str
    line: int
    importer: str
    target: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: {self.importer} imports {self.target}"


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _project_modules(root: Path) -> set[str]:
    return {_module_name(p, root) for top in (*CHECKED, "tests")
            for p in (root / top).rglob("*.py")}


def import_edges(root: Path = ROOT) -> Iterator[Edge]:
    """Every import, in every ``.py`` file of :data:`CHECKED` under ``root``, of a module
    of the project; ``from package import name`` counts as importing ``package.name``
    when that is a module."""
    known = _project_modules(root)
    tops = {*CHECKED, "tests"}
    for top in CHECKED:
        for path in sorted((root / top).rglob("*.py")):
            importer = _module_name(path, root)
            package = importer if path.name == "__init__.py" else importer.rpartition(".")[0]
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                targets: list[str] = []
                if isinstance(node, ast.Import):
                    targets = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:  # relative: from the importer's package upwards
                        up = package.split(".")[:len(package.split(".")) - node.level + 1]
                        base = ".".join(filter(None, [*up, base]))
                    targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                               for a in node.names]
                for target in targets:
                    if target.split(".")[0] in tops:
                        yield Edge(str(path.relative_to(root)), node.lineno, importer,
                                   target)


def layer_graph(edges: list[Edge]) -> dict[str, set[str]]:
    """Layer -> the other layers it imports."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        a, b = layer_of(edge.importer), layer_of(edge.target)
        graph.setdefault(a, set())
        if a != b:
            graph[a].add(b)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components of ``graph``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            out.append(component)

    for v in sorted(set(graph) | {w for ws in graph.values() for w in ws}):
        if v not in index:
            visit(v)
    return out


def forbidden(edges: list[Edge]) -> list[str]:
    """The edges that :data:`ALLOWED` does not allow, or whose layer it does not know."""
    bad = []
    for edge in edges:
        a, b = layer_of(edge.importer), layer_of(edge.target)
        if a not in ALLOWED:
            bad.append(f"{edge}: layer {a!r} is not in the table (add it to ALLOWED here "
                       "and to docs/architecture.md)")
        elif a != b and b not in ALLOWED[a]:
            bad.append(f"{edge}: layer {a} may not import layer {b}")
    return bad


def test_seer_never_imports_workloads_bench_examples_or_tests():
    edges = list(import_edges())
    assert len(edges) > 200  # the scan sees the project's imports
    outward = [str(e) for e in edges if e.importer.split(".")[0] == "seer"
               and e.target.split(".")[0] in ("workloads", "bench", "examples", "tests")]
    assert outward == []
    from_workloads = [str(e) for e in edges if e.importer.split(".")[0] == "workloads"
                      and e.target.split(".")[0] in ("bench", "examples", "tests")]
    assert from_workloads == []


def test_imports_follow_the_layer_table():
    assert forbidden(list(import_edges())) == []


def seer_cycles(edges: list[Edge]) -> list[list[str]]:
    """The import cycles between seer's layers: its strongly connected components of more
    than one layer."""
    graph = layer_graph(edges)
    seer_graph = {a: {b for b in bs if b in SEER_LAYERS} for a, bs in graph.items()
                  if a in SEER_LAYERS}
    assert {"base", "queues", "sched", "stpa", "facade", "front"} <= set(seer_graph)
    return [sorted(c) for c in strongly_connected(seer_graph) if len(c) > 1]


def test_no_import_cycle_between_seers_layers():
    assert seer_cycles(list(import_edges())) == []
    # The table itself is acyclic, so that any import it allows keeps it so.
    table = {a: set(bs) for a, bs in ALLOWED.items()}
    assert [c for c in strongly_connected(table) if len(c) > 1] == []


def module_cycles(edges: list[Edge]) -> list[list[str]]:
    """The import cycles between modules of the checked trees (imports inside functions
    count: a lazy import that closes a loop is still a loop)."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.importer, set()).add(edge.target)
    return [sorted(c) for c in strongly_connected(graph) if len(c) > 1]


def test_no_import_cycle_between_modules():
    assert module_cycles(list(import_edges())) == []


def test_the_scan_catches_a_planted_import(tmp_path):
    # The checks above can fail: the same scan over a copy with wrong imports planted.
    for top in (*CHECKED, "tests"):
        for path in (ROOT / top).rglob("*.py"):
            copy = tmp_path / path.relative_to(ROOT)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    with (tmp_path / "seer" / "sched" / "pool.py").open("a") as f:
        f.write("\n\ndef _planted():\n    from workloads.pcs import PCS\n"
                "    from ..stpa import predictor\n    return PCS, predictor\n")
    edges = list(import_edges(tmp_path))
    bad = forbidden(edges)
    assert any("seer.sched.pool imports workloads.pcs: layer sched may not import layer "
               "workloads" in b for b in bad)
    assert any("seer.sched.pool imports seer.stpa.predictor: layer sched may not import "
               "layer stpa" in b for b in bad)
    assert seer_cycles(edges) == [["sched", "stpa"]]
    with (tmp_path / "seer" / "queues" / "layout.py").open("a") as f:
        f.write("\n\ndef _planted():\n    from seer.queues import arena\n    return arena\n")
    assert ["seer.queues.arena", "seer.queues.layout"] in module_cycles(list(
        import_edges(tmp_path)))


SPEC_OUTSIDE_SEER = re.compile(r"(workloads|bench|examples)(\.\w+)+(:[\w.]+)?"
                               r"|(workloads|bench|examples):[\w.]+")


def test_seer_names_no_outside_model_spec_in_a_string():
    # A spec such as "workloads.pcs:PCS" that seer loads would be an import in disguise;
    # seer names registered models ("pcs") instead. Docstrings are prose, not specs.
    found = []
    for path in sorted((ROOT / "seer").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                           ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)}
        found += [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}"
                  for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str)
                  and id(node) not in docstrings
                  and SPEC_OUTSIDE_SEER.fullmatch(node.value.strip())]
    assert found == []


def _doc_table() -> dict[str, tuple[set[str], set[str]]]:
    """docs/architecture.md's layer table: layer -> (its modules, the layers it may
    import), read from the backticked names of each row."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[set[str], set[str]]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            layer = cells[0].strip("`")
            rows[layer] = (set(re.findall(r"`([^`]+)`", cells[1])),
                           set(re.findall(r"`([^`]+)`", cells[2])))
    return rows


def test_the_table_is_the_one_in_docs_architecture():
    rows = _doc_table()
    assert {layer: imports for layer, (_modules, imports) in rows.items()} == \
        {layer: set(allowed) for layer, allowed in ALLOWED.items()}
    assert rows["base"][0] == {f"seer.{name}" for name in BASE}


#: The product: what ``import seer`` loads (docs/architecture.md, "Product and lab"). The
#: peers (seer.peers) and the lab (check, stpa, interprocess, distributed, benchmark,
#: testing, the CLI...) load when used.
PRODUCT = frozenset({
    "seer", "seer.actions", "seer.blas", "seer.compile", "seer.errors", "seer.events",
    "seer.interrupts", "seer.limits", "seer.model", "seer.platform", "seer.runtime",
    "seer.serial", "seer.trace",
    "seer.queues", "seer.queues.arena", "seer.queues.atomic", "seer.queues.layout",
    "seer.queues.leq", "seer.queues.ms", "seer.queues.pel", "seer.queues.protocol",
    "seer.sched", "seer.sched.assignment", "seer.sched.calendar", "seer.sched.dual_queue",
    "seer.sched.copies", "seer.sched.pool", "seer.sched.windows", "seer.sched.worker",
})


def _module_level(tree: ast.Module) -> Iterator[ast.stmt]:
    """The statements a module runs when imported (not inside functions or classes'
    methods, nor under ``if TYPE_CHECKING``)."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo += node.orelse
            continue
        yield node
        todo += [child for child in ast.iter_child_nodes(node) if isinstance(child, ast.stmt)]


def product_leaks(root: Path = ROOT) -> list[str]:
    """Imports that a product module runs on import and that name a module outside
    :data:`PRODUCT` (imports inside functions load on use: STPA for ``threads="auto"``, the
    peers when the registry first needs them)."""
    known = _project_modules(root)
    leaks = []
    for module in sorted(PRODUCT):
        path = root / (module.replace(".", "/") + ".py")
        if not path.is_file():
            path = root / module.replace(".", "/") / "__init__.py"
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _module_level(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(filter(None, [*up, base]))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base
                           for a in node.names]
            else:
                continue
            leaks += [f"{path.relative_to(root)}:{node.lineno}: {module} imports {t}"
                      for t in targets if t.split(".")[0] == "seer" and t not in PRODUCT]
    return leaks


def test_the_product_imports_only_the_product():
    assert product_leaks() == []


def test_import_seer_loads_the_product_and_nothing_else():
    import subprocess
    import sys

    code = ("import sys, seer; print(' '.join(sorted(m for m in sys.modules "
            "if m == 'seer' or m.startswith('seer.'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT).stdout.split()
    assert set(out) == PRODUCT


def test_a_planted_peer_or_lab_import_in_the_product_fails(tmp_path):
    for top in ("seer",):
        for path in (ROOT / top).rglob("*.py"):
            copy = tmp_path / path.relative_to(ROOT)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    for top in ("workloads", "bench", "examples", "tests"):
        (tmp_path / top).mkdir(exist_ok=True)
    with (tmp_path / "seer" / "sched" / "pool.py").open("a") as f:
        f.write("\nimport seer.peers.static\nfrom seer.check import explore\n")
    leaks = product_leaks(tmp_path)
    assert any("seer.sched.pool imports seer.peers.static" in leak for leak in leaks)
    assert any("seer.sched.pool imports seer.check" in leak for leak in leaks)
    bad = forbidden(list(import_edges(tmp_path)))
    assert any("layer sched may not import layer peers" in b for b in bad)
