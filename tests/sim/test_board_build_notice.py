"""The simulated board says on stderr that it builds, once, before a (minutes-long) build.

The simulator's build itself is replaced by a stand-in that records the call (no Verilator
run): what is checked is that the line comes before the build, names the simulator and the
folder, and that a cached build prints nothing.
"""

import pytest
from amaranth.back import verilog

from linkdyn.sim import board as board_module
from linkdyn.sim.board import SimulatedBoard
from linkdyn.sim.runner import SimulatorMissing


def test_a_fresh_build_prints_one_line_first_and_a_cached_one_none(tmp_path, monkeypatch,
                                                                   capfd):
    calls = []

    def build(sim, sources, build_dir, log):
        calls.append((sim, capfd.readouterr().err))          # what was printed before it
    monkeypatch.setattr(board_module, "_build", build)
    convert, converted = verilog.convert, []

    def convert_once(*args, **kwargs):   # the same design twice: convert it once (seconds)
        if not converted:
            converted.append(convert(*args, **kwargs))
        return converted[0]
    monkeypatch.setattr(verilog, "convert", convert_once)
    core, cores = SimulatedBoard._core, []

    def core_once(self):                 # and the same core object (elaborated once)
        if not cores:
            cores.append(core(self))
        return cores[0]
    monkeypatch.setattr(SimulatedBoard, "_core", core_once)
    try:
        first = SimulatedBoard(1, build_root=tmp_path, simulator="verilator")
        build_dir = first.build()
    except SimulatorMissing:
        pytest.skip("no Verilator")
    assert len(calls) == 1
    sim, before = calls[0]
    assert before == (f"building the simulated board with Verilator (first run only; a minute "
                      f"or two) in {build_dir} ...\n")
    assert capfd.readouterr().err == ""
    SimulatedBoard(1, build_root=tmp_path, simulator="verilator").build()   # cached: silent
    assert len(calls) == 1 and capfd.readouterr().err == ""
