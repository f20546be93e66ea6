"""Layers one way (docs/architecture.md, *Layers*): model -> gateware -> boards / sim -> host ->
bench. No module imports a layer above its own, not even inside a function, and the gateware
holds only components and their helpers (no simulator, no cocotb)."""

import ast
from pathlib import Path

import pytest

#: The packages each layer may import (besides itself); `sim` sits above `boards` (the
#: simulated board is a board core), `boards` never imports `sim`.
ALLOWED = {
    "model": set(),
    "gateware": {"model"},
    "boards": {"model", "gateware"},
    "sim": {"model", "gateware", "boards"},
    "host": {"model", "gateware", "boards", "sim"},
    "bench": {"model", "gateware", "boards", "sim", "host"},
}


def _package_dir(name):
    return Path(__import__(f"linkdyn.{name}", fromlist=["_"]).__file__).resolve().parent


def _imported_layers(source, here):
    """Yield (line, layer) for every linkdyn package a module's source imports; ``here`` is the
    dotted name of the module's package (``"linkdyn.sim"``), for relative imports
    (``from ..host import x`` there is linkdyn.host)."""
    here = here.split(".")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1]
                names = [".".join(base + ([node.module] if node.module else []))]
            else:
                names = [node.module or ""]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "linkdyn" and len(parts) > 1:
                yield node.lineno, parts[1]


def _modules(package):
    root = _package_dir(package)
    for path in sorted(root.rglob("*.py")):
        subpackage = ".".join(("linkdyn", package) + path.relative_to(root).parts[:-1])
        yield path, subpackage


def test_the_import_reader_resolves_relative_and_function_level_imports():
    source = ("import numpy\nfrom . import plant\nfrom ..model import rnea\n"
              "def f():\n    from ..host.board import Board\n    import linkdyn.bench.node\n")
    assert list(_imported_layers(source, "linkdyn.sim")) == [
        (2, "sim"), (3, "model"), (5, "host"), (6, "bench")]
    assert list(_imported_layers("from ...model import x\n", "linkdyn.host.trajectory")) == [
        (1, "model")]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_no_module_imports_a_higher_layer(package):
    offenders = []
    for path, here in _modules(package):
        for line, layer in _imported_layers(path.read_text(), here):
            if layer != package and layer in ALLOWED and layer not in ALLOWED[package]:
                offenders.append(f"{path.name}:{line} imports linkdyn.{layer}")
    assert offenders == []


def test_the_gateware_has_no_simulator_or_testbench_code():
    offenders = []
    for path in sorted(_package_dir("gateware").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                module = node.module if isinstance(node, ast.ImportFrom) else None
                names = [module] if module else [alias.name for alias in node.names]
                if any(str(n).startswith(("amaranth.sim", "cocotb")) for n in names):
                    offenders.append(f"{path.name}:{node.lineno}")
    assert offenders == []
