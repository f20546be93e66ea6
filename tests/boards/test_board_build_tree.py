"""Board builds of a tree of nodes (``--robot``, ``--parents``; docs/trees.md).

The board top builds ``LinkDynChain(n, parents=...)`` and a host link whose INFO reports the
parents; the build's report records them and carries the tree's own simulated update counters.
Yosys, nextpnr and ecppack are stand-ins here (scripts with known results); the real build is
``python -m linkdyn.boards.build --board ulx3s --parents=-1,0,1,2,3,4,5,0,7,8,9,10,11,12
--router router2`` (docs/performance.md, *Trees of nodes*).
"""

import json
import os
import stat
import sys
import textwrap

import pytest

from linkdyn.boards import BOARDS
from linkdyn.boards import build as build_module
from linkdyn.boards.cycles import simulate_update_cycles
from linkdyn.gateware.chain import LinkDynChain
from linkdyn.gateware.cordic import STEP_CYCLES
from linkdyn.model import save_robot
from linkdyn.model.golden_tree import node_tree
from linkdyn.model.tree_robots import two_arm_tree
from support.make import bitstream_command

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


_STAND_INS = {
    "yosys": """\
        import sys
        if "-V" in sys.argv: print("Yosys 0.0 (stand-in)"); sys.exit(0)
        open("top.json", "w").write("{}")
        """,
    "nextpnr-ecp5": """\
        import json, sys
        args = sys.argv[1:]
        if "--version" in args: print("nextpnr-0.0 (stand-in)"); sys.exit(0)
        used = {"TRELLIS_COMB": 50000, "TRELLIS_FF": 21000, "MULT18X18D": 56,
                "DP16KD": 60, "TRELLIS_IO": 8}
        json.dump({"fmax": {"$glbnet$clk": {"achieved": 62.5, "constraint": 100.0}},
                   "utilization": {k: {"used": v, "available": 1000} for k, v in used.items()},
                   "critical_paths": []}, open(args[args.index("--report") + 1], "w"))
        open(args[args.index("--textcfg") + 1], "w").write(".device LFE5U-85F\\n")
        """,
    "ecppack": """\
        import sys
        if "--version" in sys.argv: print("ecppack stand-in"); sys.exit(0)
        open(sys.argv[sys.argv.index("--bit") + 1], "wb").write(b"bitstream")
        """,
}


@pytest.fixture
def stand_in_tools(tmp_path, monkeypatch):
    tools = tmp_path / "tools"
    tools.mkdir()
    for name, source in _STAND_INS.items():
        path = tools / name
        path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(source))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
        monkeypatch.setenv(name.upper().replace("-", "_"), str(path))
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin")


def test_board_top_builds_the_tree_and_its_host_link_reports_the_parents():
    parents = node_tree(two_arm_tree()).parents
    top = BOARDS["ulx3s"](14, parents=parents)
    assert top.core.chain.parents == parents
    assert top.core.hostlink.spec.parents == parents
    assert BOARDS["ulx3s"](6).core.hostlink.spec.parents == (-1, 0, 1, 2, 3, 4)
    with pytest.raises(ValueError, match="from the LinkDyn chain alone"):
        BOARDS["ulx3s"](3, parents=(-1, 0, 0), controllers=True)
    with pytest.raises(ValueError, match="stand-in chain is a chain only"):
        BOARDS["ulx3s"](3, parents=(-1, 0, 0), chain="fake")


@pytest.mark.parametrize("argv, message", [
    (["--parents=-1,0,3"], "node 2's parent must be -1 or a node before it, not 3"),
    (["--parents=-1,x"], "--parents must be comma-separated integers"),
    (["--parents=-1,0,0", "--nodes", "4"], "--nodes 4 does not match the topology's 3 nodes"),
    (["--parents=-1,0,0", "--controllers"], "--controllers builds the chain only"),
    (["--robot", "nosuch"], "--robot nosuch: unknown robot"),
])
def test_build_command_line_refuses_a_topology_it_cannot_build(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_module.main(["--board", "ulx3s", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_build_of_a_robots_tree_records_the_parents_and_the_trees_cycles(
        stand_in_tools, tmp_path):
    robot = two_arm_tree(joints=1)                # torso + two 1-link arms: 4 nodes
    tree = node_tree(robot)
    assert tree.parents == (-1, 0, 0, 2)
    path = tmp_path / "tree.json"
    save_robot(robot, path)
    out = tmp_path / "u"
    status = build_module.main(["--board", "ulx3s", "--robot", str(path), "--router",
                                "router2", "--out", str(out)])
    assert status == 4                            # the stand-in's 62.5 MHz < 100 MHz
    report = json.loads((out / "report.json").read_text())
    assert report["parents"] == [-1, 0, 0, 2] and report["nodes"] == 4
    assert report["robot"] == str(path)
    assert f"--robot {path}" in report["command"] and "--router router2" in report["command"]
    tree_cycles = simulate_update_cycles(LinkDynChain(4, parents=tree.parents,
                                                      cordic_step_cycles=STEP_CYCLES["ecp5"]))
    chain_cycles = simulate_update_cycles(LinkDynChain(4, cordic_step_cycles=STEP_CYCLES["ecp5"]))
    assert report["update_latency_cycles"] == tree_cycles["update_latency_cycles"]
    assert report["update_latency_cycles"] < chain_cycles["update_latency_cycles"]
    assert "tree of nodes    parents -1,0,0,2" in (out / "report.txt").read_text()


@pytest.mark.parametrize("variables, passed", [
    (["ROBOT=two_arm.json"], "--robot two_arm.json"),
    (["PARENTS=-1,0,0"], "--parents=-1,0,0"),
    (["ROUTER=router2"], "--router router2"),
])
def test_make_bitstream_passes_the_topology_to_the_build(variables, passed):
    assert passed in bitstream_command("BOARD=ulx3s", *variables)
