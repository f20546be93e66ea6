"""The update policy of the distributed mode chosen at build time: ``python -m
linkdyn.boards.build --distributed --policy pipelined`` (a synthesis-only build with a
stand-in Yosys: the report names the policy, the Verilog has the pipelined board),
``SimulatedBoard(boards=n, policy=...)`` and ``linkdyn sim-board --policy``, and the clear
errors for combinations that do not exist (controllers with the pipelined policy)."""

import json
import os
import stat
import sys

import pytest

from linkdyn.boards import build as board_build
from linkdyn.boards.actuator_board import ActuatorBoardCore
from linkdyn.host.cli import main as cli_main
from linkdyn.sim.board import SimulatedBoard

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

#: A Yosys that answers the Spartan-6 synthesis with fixed cell counts (FAKE_CELLS).
FAKE_YOSYS = """\
import json, os, re, sys
args = sys.argv[1:]
if "-V" in args:
    print("Yosys 0.0 (stand-in)"); sys.exit(0)
script = args[args.index("-p") + 1]
out = re.search(r"tee -q -o (\\S+) stat -json", script).group(1)
cells = json.loads(os.environ["FAKE_CELLS"])
json.dump({"design": {"num_cells_by_type": cells}, "modules": {}}, open(out, "w"))
"""


def test_pipelined_policy_with_controllers_is_refused(capsys):
    with pytest.raises(SystemExit) as caught:
        board_build.main(["--board", "mimas", "--distributed", "--role", "middle",
                          "--policy", "pipelined", "--controllers"])
    assert caught.value.code == board_build.EXIT_USAGE
    assert "pipelined policy has no joint controllers" in capsys.readouterr().err
    with pytest.raises(ValueError, match="without joint controllers"):
        SimulatedBoard(2, boards=2, policy="pipelined", controllers=True)
    with pytest.raises(ValueError, match="Policy must be"):
        SimulatedBoard(2, boards=2, policy="parallel")
    with pytest.raises(ValueError, match="2 or 4"):
        ActuatorBoardCore(role="middle", clock_hz=1_000_000, policy="pipelined", banks=3)


def test_distributed_build_takes_the_pipelined_policy(tmp_path, monkeypatch):
    tools = tmp_path / "tools"
    tools.mkdir()
    yosys = tools / "yosys"
    yosys.write_text(f"#!{sys.executable}\n" + FAKE_YOSYS)
    yosys.chmod(yosys.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("YOSYS", str(yosys))
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setenv("FAKE_CELLS", json.dumps({"LUT6": 5000, "FDRE": 3000, "DSP48A1": 4,
                                                 "RAMB16BWER": 6}))
    out = tmp_path / "middle"
    assert board_build.main(["--board", "mimas", "--distributed", "--role", "middle",
                             "--policy", "pipelined", "--synth-only", "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["policy"] == "pipelined"
    assert report["distributed"]["policy"] == "pipelined"
    assert "--distributed --role middle" in report["command"]
    assert "--policy pipelined" in report["command"]
    verilog = (out / "top.v").read_text()
    # The pipelined board's per-update result shadow and its sample counter.
    assert "result_tau" in verilog and "head_sample" in verilog


def test_simulated_board_builds_the_chain_of_its_policy():
    board = SimulatedBoard(3, boards=3, policy="pipelined")
    chain = board._core().chain
    assert type(chain).__name__ == "DistributedChain"
    assert chain.policy == "pipelined" and chain.banks == 4 and chain.max_in_flight == 8
    assert "pipelined" in board._chain_label
    sequential = SimulatedBoard(3, boards=3)
    assert sequential._core().chain.policy == "sequential"
    assert "pipelined" not in sequential._chain_label
    single = SimulatedBoard(3, policy="pipelined")._core().chain
    assert type(single).__name__ == "LinkDynChain" and single.policy == "pipelined"


def test_sim_board_command_refuses_pipelined_with_controllers(capsys):
    status = cli_main(["sim-board", "--boards", "2", "--policy", "pipelined",
                       "--controllers"])
    assert status != 0
    assert "--policy pipelined" in capsys.readouterr().err
