"""The sim layer sits below the host (importing the simulated board loads no host module; the
import rule itself is tests/test_layers.py), resolves the simulator in one place with a per-use
default, and sets environment variables through one context manager."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import linkdyn.sim
from linkdyn.sim.runner import DEFAULT_SIMULATORS, SimulatorMissing, environment, simulator

SIM_DIR = Path(linkdyn.sim.__file__).resolve().parent


def test_importing_the_simulated_board_loads_no_host_module():
    code = ("import sys, linkdyn.sim.board; "
            "print(sorted(m for m in sys.modules if m.startswith('linkdyn.host')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.fixture
def no_sim_variable(monkeypatch):
    monkeypatch.delenv("SIM", raising=False)


@pytest.mark.skipif(shutil.which("iverilog") is None, reason="Icarus Verilog not installed")
def test_each_use_has_its_default_and_sim_or_the_caller_override_it(no_sim_variable,
                                                                    monkeypatch):
    assert DEFAULT_SIMULATORS == {"testbench": ("icarus",), "board": ("verilator", "icarus")}
    assert simulator() == "icarus"
    try:
        verilator = simulator("verilator")
    except SimulatorMissing:
        verilator = None
    assert simulator(use="board") == (verilator or "icarus")
    monkeypatch.setenv("SIM", "icarus")
    assert simulator(use="board") == "icarus"
    assert simulator("ICARUS", use="board") == "icarus"
    with pytest.raises(SimulatorMissing, match="SIM must be 'icarus' or 'verilator', not 'ghdl'"):
        simulator("ghdl")
    with pytest.raises(ValueError, match="Use must be one of"):
        simulator(use="bench")


def test_environment_sets_and_restores_even_when_the_block_raises(monkeypatch):
    monkeypatch.setenv("LINKDYN_TEST_KEPT", "before")
    monkeypatch.delenv("LINKDYN_TEST_NEW", raising=False)
    with pytest.raises(RuntimeError):
        with environment(LINKDYN_TEST_KEPT="inside", LINKDYN_TEST_NEW="new"):
            assert os.environ["LINKDYN_TEST_KEPT"] == "inside"
            assert os.environ["LINKDYN_TEST_NEW"] == "new"
            raise RuntimeError("the build failed")
    assert os.environ["LINKDYN_TEST_KEPT"] == "before"
    assert "LINKDYN_TEST_NEW" not in os.environ
    with environment(LINKDYN_TEST_KEPT=None):
        assert "LINKDYN_TEST_KEPT" not in os.environ
    assert os.environ["LINKDYN_TEST_KEPT"] == "before"
