"""Board builds with a joint controller beside every node (``--controllers``).

The board top builds a ControlledChain (the family's CORDIC steps) and a core with the CONTROL
command; the build's report says so and carries the chain's own simulated update counters. The
synthesis is a stand-in Yosys here (a script whose cell counts are known); the real builds are
``python -m linkdyn.boards.build --board ulx3s --nodes 6 --controllers`` (docs/performance.md).
"""

import json
import os

import pytest

from linkdyn.boards import BOARDS
from linkdyn.boards import build as build_module
from linkdyn.boards import summary
from linkdyn.boards.cycles import simulate_update_cycles
from linkdyn.gateware.chain import LinkDynChain
from linkdyn.gateware.controlled_chain import ControlledChain
from linkdyn.gateware.cordic import STEP_CYCLES
from support import stand_in_tools
from support.make import bitstream_command

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


#: A Yosys that answers linkdyn's synthesis run with fixed cell counts (FAKE_CELLS).
FAKE_YOSYS = """\
import json, os, re, sys
args = sys.argv[1:]
if "-V" in args:
    print("Yosys 0.0 (stand-in)"); sys.exit(0)
if "-p" not in args:                   # Amaranth's ECP5 build script: yosys -q -l top.rpt top.ys
    assert "top.ys" in args, args
    open("top.json", "w").write("{}"); sys.exit(0)
script = args[args.index("-p") + 1]
assert "synth_xilinx -family xc6s" in script, script
out = re.search(r"tee -q -o (\\S+) stat -json", script).group(1)
cells = json.loads(os.environ["FAKE_CELLS"])
json.dump({"design": {"num_cells_by_type": cells}, "modules": {}}, open(out, "w"))
"""

#: A nextpnr-ecp5 that checks the router it is given and reports a fixed Fmax (FAKE_FMAX).
FAKE_NEXTPNR = """\
import json, os, sys
args = sys.argv[1:]
if "--version" in args:
    print("nextpnr-0.0 (stand-in)"); sys.exit(0)
assert args[args.index("--router") + 1] == os.environ["FAKE_ROUTER"], args
used = {"TRELLIS_COMB": 30000, "TRELLIS_FF": 12000, "MULT18X18D": 48, "ALU54B": 0,
        "DP16KD": 39, "TRELLIS_IO": 8}
json.dump({"fmax": {"$glbnet$clk": {"achieved": float(os.environ["FAKE_FMAX"]),
                                    "constraint": 100.0}},
           "utilization": {k: {"used": v, "available": 1000} for k, v in used.items()},
           "critical_paths": []}, open(args[args.index("--report") + 1], "w"))
open(args[args.index("--textcfg") + 1], "w").write(".device LFE5U-85F\\n")
"""

@pytest.fixture
def stand_in_yosys(tmp_path, monkeypatch):
    tools = tmp_path / "tools"
    tools.mkdir()
    write = stand_in_tools.write_tool
    monkeypatch.setenv("YOSYS", write(tools, "yosys", FAKE_YOSYS))
    monkeypatch.setenv("NEXTPNR_ECP5", write(tools, "nextpnr-ecp5", FAKE_NEXTPNR))
    monkeypatch.setenv("ECPPACK", write(tools, "ecppack", stand_in_tools.ECPPACK))
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin")
    for tool in ("XST", "NGDBUILD", "MAP", "PAR", "BITGEN"):
        monkeypatch.delenv(tool, raising=False)


@pytest.mark.parametrize("name", ["ulx3s", "mimas"])
def test_board_top_with_controllers_builds_a_controlled_chain_with_the_family_cordic(name):
    top = BOARDS[name](1, controllers=True)
    chain = top.core.chain
    assert isinstance(chain, ControlledChain) and top.core.controllers
    assert top.core.hostlink.spec.controllers
    assert chain.chain.policy == "sequential"
    assert [node.cordic_step_cycles for node in chain.chain.nodes] == [
        STEP_CYCLES[BOARDS[name].family]]
    plain = BOARDS[name](1)
    assert isinstance(plain.core.chain, LinkDynChain) and not plain.core.controllers


@pytest.mark.parametrize("kwargs, error, match", [
    ({"controllers": 1}, TypeError, "controllers must be a bool, not 1"),
    ({"controllers": True, "chain": "fake"}, ValueError,
     "beside the LinkDyn chain only, not with chain 'fake'"),
    ({"controllers": True, "policy": "pipelined"}, ValueError,
     "sequential policy, not 'pipelined'"),
])
def test_board_top_refuses_controllers_it_cannot_build(kwargs, error, match):
    with pytest.raises(error, match=match):
        BOARDS["mimas"](1, **kwargs)


@pytest.mark.parametrize("argv, message", [
    (["--controllers", "--chain", "fake"],
     "--controllers needs the LinkDyn chain, not --chain fake"),
    (["--controllers", "--policy", "pipelined"],
     "--controllers needs the sequential policy, not --policy pipelined"),
])
def test_build_command_line_refuses_controllers_without_the_sequential_chain(argv, message,
                                                                             capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_module.main(["--board", "mimas", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_build_with_controllers_reports_them_and_the_chains_simulated_counters(
        stand_in_yosys, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_CELLS", json.dumps({"LUT6": 4321, "FDRE": 3000, "DSP48A1": 8,
                                                 "RAMB8BWER": 3, "RAMB16BWER": 3}))
    out = tmp_path / "m"
    status = build_module.main(["--board", "mimas", "--nodes", "1", "--controllers",
                                "--synth-only", "--out", str(out)])
    assert status == 0
    report = json.loads((out / "report.json").read_text())
    assert report["controllers"] is True
    assert (report["chain"], report["policy"]) == ("linkdyn", "sequential")
    assert (report["luts"], report["dsps"], report["brams"]) == (4321, 8, 4.5)
    assert report["utilisation_percent"]["luts"] == round(100 * 4321 / 5720, 1)
    assert "--controllers" in report["command"]
    bare = simulate_update_cycles(LinkDynChain(1, cordic_step_cycles=STEP_CYCLES["xc6s"]))
    assert report["update_latency_cycles"] == bare["update_latency_cycles"]
    assert "Controlled chain" in report["cycles_source"]
    text = (out / "report.txt").read_text()
    assert "a joint controller beside every node" in text
    # The joint port's pins (boards/joint_pins.py) are in the report.
    assert report["joint_pins"].startswith("SPI joint ports (sclk 12.5 MHz")
    assert "joint 0: sclk P1-10 (P26)" in report["joint_pins"] and "joint pins" in text
    assert "a joint controller beside every node" in capsys.readouterr().out
    # The ISE build tree carries the controllers: the Verilog has the controller's module.
    assert "controller0" in (out / "top.v").read_text()
    # The summary marks the build and writes it into its own table, the rest left alone.
    doc = tmp_path / "performance.md"
    begin, end = summary.markers("controllers")
    doc.write_text(f"x\n{summary.BEGIN}\nplain\n{summary.END}\n{begin}\nold\n{end}\ny\n")
    assert summary.main([str(out), "--write-docs", str(doc), "--table", "controllers"]) == 0
    content = doc.read_text()
    assert f"{summary.BEGIN}\nplain\n{summary.END}" in content and "old" not in content
    row = content.split(begin)[1].split(end)[0].strip().splitlines()[-1]
    assert row.startswith("| Numato Mimas | xc6slx9-2tqg144 | 1 | LinkDynChain + controllers "
                          "(sequential) |")
    assert "| 4,321 (76 %) |" in row


@pytest.mark.parametrize("value, passed", [("1", True), ("0", False), ("", False)])
def test_make_bitstream_passes_controllers_1_to_the_build(value, passed):
    line = bitstream_command("BOARD=mimas", f"CONTROLLERS={value}")
    assert "--board mimas" in line
    assert ("--controllers" in line) is passed


@pytest.mark.parametrize("fmax, status", [(51.2, 4), (104.0, 0)])
def test_ecp5_build_with_controllers_gives_nextpnr_the_router_and_reports_timing(
        fmax, status, stand_in_yosys, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_FMAX", str(fmax))
    monkeypatch.setenv("FAKE_ROUTER", "router2")
    out = tmp_path / "u"
    assert build_module.main(["--board", "ulx3s", "--nodes", "1", "--controllers", "--router",
                              "router2", "--out", str(out)]) == status
    report = json.loads((out / "report.json").read_text())
    assert report["controllers"] is True and report["fmax_mhz"] == fmax
    assert report["timing_met"] is (status == 0)
    assert (report["luts"], report["dsps"]) == (30000, 48)
    assert "--controllers --router router2" in report["command"]
