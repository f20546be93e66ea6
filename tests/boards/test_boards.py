"""Board top-levels, their build (report.json) and programming commands.

The full builds (Yosys + nextpnr + ecppack, minutes) are not run here; the command is
``python -m linkdyn.boards.build --board ulx3s --nodes 6`` (docs/performance.md, "Boards").
Every board top is elaborated through its amaranth-boards platform (``platform.prepare``),
and the build's report is produced with stand-in tools (small Python scripts named by
``YOSYS``, ``NEXTPNR_ECP5``, ``ECPPACK``, ``OPENFPGALOADER``) whose outputs are known, so that
the accounting (cell weights, Fmax, timing verdict, exit status) is checked exactly. With
``LINKDYN_LONG=1`` a real Yosys synthesis of a 1-node XC6SLX9 build runs as well.
"""

import json
import os
import re
import stat
import sys
import textwrap
from fractions import Fraction

import pytest
from amaranth import Elaboratable, Module

from linkdyn.boards import BOARD_IDS, BOARDS, board
from linkdyn.boards import build as build_module
from linkdyn.boards import program as program_module
from linkdyn.boards import summary
from linkdyn.boards.build import REPORT_FIELDS, build
from linkdyn.boards.common import (
    DEFAULT_CHAIN, check_chain, ecp5_pll_setting, spartan6_pll_setting,
)
from linkdyn.boards.cycles import schedule_update_cycles, simulate_update_cycles
from linkdyn.gateware.cordic import STEP_CYCLES
from linkdyn.gateware.fake_chain import FakeChain
from linkdyn.model.golden import microprogram
from support.make import bitstream_command

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")

#: Pins each board's constraints must carry: (UART rx, UART tx, LED 0).
PINS = {
    "ulx3s": ('"M1"', '"L4"', '"B2"'),
    "atlys": ("LOC=A16", "LOC=B16", "LOC=U18"),
    "mimas": ("LOC=P35", "LOC=P34", "LOC=P119"),
    "sk_xc6slx9": ("LOC=P34", "LOC=P33", "LOC=P32"),
}


# -- elaboration ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(BOARDS))
def test_board_top_prepares_its_build_tree_for_the_default_node_count(name):
    top_class = BOARDS[name]
    top = top_class()
    assert top.nodes == top_class.default_nodes
    assert top.core.nodes == top.nodes
    if DEFAULT_CHAIN == "linkdyn":
        assert type(top.core.chain).__name__ == "LinkDynChain"
        assert len(top.core.chain.nodes) == top.nodes
    plan = top_class.platform().prepare(top, name="top")
    files = set(plan.files)
    assert "build_top.sh" in files
    if top_class.family == "ecp5":
        assert {"top.il", "top.lpf", "top.ys"} <= files
        constraints = plan.files["top.lpf"]
        netlist = plan.files["top.il"]
        pll = ecp5_pll_setting(25_000_000, top_class.default_clock_hz)
        for parameter, value in (("CLKI_DIV", pll.input_div), ("CLKFB_DIV", pll.feedback_mult),
                                 ("CLKOP_DIV", pll.output_div),
                                 ("CLKOP_CPHASE", (pll.output_div - 1) // 2)):
            assert re.search(rf"parameter \\{parameter} {value}\n", netlist), parameter
        assert 'FREQUENCY PORT "clk25_0__io" 25000000.0 HZ' in constraints
    else:
        assert {"top.v", "top.ucf", "top.xst", "top.prj"} <= files
        constraints = plan.files["top.ucf"]
        assert "STARTUP_SPARTAN6" in plan.files["top.v"]
        assert "BUFGCE" in plan.files["top.v"]
        period = 1e9 / top_class.default_clock_hz
        assert f"PERIOD" in constraints and f"{period:.1f} ns" in constraints
    for pin in PINS[name]:
        assert pin in constraints, (name, pin)


@pytest.mark.parametrize("name", list(BOARDS))
def test_board_family_sets_the_cordic_step_timing_of_its_nodes(name):
    """Spartan-6 boards build one-cycle CORDIC steps (fewer LUTs), the ECP5 two-cycle ones
    (100 MHz), from the one table STEP_CYCLES."""
    top_class = BOARDS[name]
    top = top_class(min(2, top_class.max_nodes), chain="linkdyn")
    assert top.cordic_step_cycles == STEP_CYCLES[top_class.family] == {
        "ecp5": 2, "xc6s": 1}[top_class.family]
    assert [node.cordic_step_cycles for node in top.core.chain.nodes] == (
        [top.cordic_step_cycles] * top.nodes)


def test_spartan6_top_uses_a_pll_for_a_clock_other_than_the_oscillator():
    top = BOARDS["atlys"](1, clock_hz=75_000_000, chain="fake")
    plan = BOARDS["atlys"].platform().prepare(top, name="top")
    verilog = plan.files["top.v"]
    assert "PLL_BASE" in verilog
    assert re.search(r"\.CLKFBOUT_MULT\(32'd9\)", verilog)
    assert re.search(r"\.CLKOUT0_DIVIDE\(32'd12\)", verilog)


def test_board_ids_are_distinct_and_every_board_has_one():
    assert set(BOARDS) <= set(BOARD_IDS)
    assert len(set(BOARD_IDS.values())) == len(BOARD_IDS)
    assert BOARD_IDS["simulation"] == 0


def test_core_reports_the_board_id_of_its_board():
    top = BOARDS["mimas"](1)
    spec = top.core.hostlink.engine.spec
    assert (spec.board_id, spec.banks) == (BOARD_IDS["mimas"], 1)


# -- PLL settings ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mhz", [25, 40, 50, 60, 62.5, 65, 75, 80, 90, 100, 120, 125])
def test_ecp5_pll_setting_makes_the_clock_within_the_device_ranges(mhz):
    out_hz = round(mhz * 1e6)
    s = ecp5_pll_setting(25_000_000, out_hz)
    assert s.out_hz == Fraction(25_000_000, s.input_div) * s.feedback_mult
    assert s.out_hz == out_hz
    assert 400e6 <= s.vco_hz <= 800e6 and s.vco_hz == s.out_hz * s.output_div
    assert 3.125e6 <= 25e6 / s.input_div <= 400e6
    assert 1 <= s.input_div <= 128 and 1 <= s.feedback_mult <= 80 and 1 <= s.output_div <= 128


@pytest.mark.parametrize("mhz, dividers", [(100, (1, 4, 6)), (75, (1, 3, 8)), (50, (1, 2, 12))])
def test_ecp5_pll_setting_follows_project_trellis_ecppll(mhz, dividers):
    # ecppll -i 25 -o 100 gives CLKI_DIV 1, CLKFB_DIV 4, CLKOP_DIV 6; like it, the VCO nearest
    # 600 MHz is taken among exact settings.
    s = ecp5_pll_setting(25_000_000, mhz * 1_000_000)
    assert (s.input_div, s.feedback_mult, s.output_div) == dividers


def test_ecp5_pll_setting_names_the_nearest_clock_when_none_is_exact():
    with pytest.raises(ValueError, match=r"cannot make 33.3 MHz .* nearest 33.3333 MHz"):
        ecp5_pll_setting(25_000_000, 33_300_000)
    assert ecp5_pll_setting(25_000_000, 33_333_333).out_hz == Fraction(100_000_000, 3)


@pytest.mark.parametrize("in_hz, out_hz", [(100_000_000, 75_000_000), (100_000_000, 50_000_000),
                                           (50_000_000, 100_000_000), (50_000_000, 80_000_000)])
def test_spartan6_pll_setting_makes_the_clock_within_the_device_ranges(in_hz, out_hz):
    s = spartan6_pll_setting(in_hz, out_hz)
    assert s.vco_hz == Fraction(in_hz, s.input_div) * s.feedback_mult
    assert s.vco_hz / s.output_div == out_hz
    assert 400e6 <= s.vco_hz <= 1000e6 and 19e6 <= in_hz / s.input_div <= 375e6


def test_spartan6_pll_setting_rejects_an_unreachable_clock():
    with pytest.raises(ValueError, match="Spartan-6 PLL cannot make 1 MHz"):
        spartan6_pll_setting(100_000_000, 1_000_000)


# -- bad arguments --------------------------------------------------------------------------------

def test_unknown_board_is_refused_with_the_list_of_boards():
    with pytest.raises(ValueError, match="Board must be one of ulx3s, atlys, mimas, sk_xc6slx9"):
        board("de0")


@pytest.mark.parametrize("name, nodes, error, match", [
    ("ulx3s", 0, ValueError, r"ULX3S 85F \(LFE5U-85F\) must be in 1..23, not 0"),
    ("mimas", 3, ValueError, r"Numato Mimas \(xc6slx9\) must be in 1..2, not 3"),
    ("sk_xc6slx9", 99, ValueError, r"must be in 1..2, not 99"),
    ("atlys", 2.0, TypeError, "Node count must be an integer, not 2.0"),
    ("atlys", True, TypeError, "Node count must be an integer, not True"),
])
def test_node_count_outside_the_board_range_is_refused(name, nodes, error, match):
    with pytest.raises(error, match=match):
        BOARDS[name](nodes)


def test_chain_with_another_node_count_is_refused():
    with pytest.raises(ValueError, match="The chain has 3 nodes, the board 2"):
        BOARDS["mimas"](2, chain=FakeChain(3))


def test_clock_the_board_cannot_make_is_refused():
    with pytest.raises(ValueError, match="ECP5 PLL cannot make"):
        BOARDS["ulx3s"](1, clock_hz=33_300_000)
    with pytest.raises(TypeError, match="Clock frequency must be an integer"):
        BOARDS["ulx3s"](1, clock_hz=100e6)


def test_unknown_chain_or_policy_is_refused():
    with pytest.raises(ValueError, match="Chain must be one of linkdyn, fake, not 'real'"):
        check_chain("real")
    with pytest.raises(ValueError, match="Policy must be one of sequential, pipelined"):
        check_chain("linkdyn", "eager")
    with pytest.raises(ValueError, match="stand-in chain has no update policy 'pipelined'"):
        check_chain("fake", "pipelined")
    assert check_chain(None) == (DEFAULT_CHAIN, "sequential" if DEFAULT_CHAIN == "linkdyn"
                                 else None)


@pytest.mark.parametrize("argv, message", [
    (["--board", "de0"], "invalid choice: 'de0'"),
    (["--nodes", "0"], "must be in 1..23, not 0"),
    (["--board", "mimas", "--nodes", "3"], "must be in 1..2, not 3"),
    (["--clock-mhz", "33.3"], "cannot make 33.3 MHz"),
    (["--clock-mhz", "-5"], "must be positive"),
    (["--clock-mhz", "nan"], "must be positive and finite, not nan"),
    (["--clock-mhz", "inf"], "must be positive and finite, not inf"),
    (["--clock-mhz", "1e-9"], "--clock-mhz 1e-09 is below 1 Hz"),
    (["--board", "mimas", "--clock-mhz", "1000"],
     "Spartan-6 core clock can be at most 375 MHz (a global clock buffer, DS162, speed grade "
     "-2), not 1000 MHz"),
    (["--chain", "fake", "--policy", "pipelined"], "no update policy 'pipelined'"),
    (["--out", ""], "--out must name a build directory, not an empty string"),
])
def test_build_command_line_exits_2_with_a_clear_message(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_module.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_build_refuses_an_out_path_that_is_not_a_directory(tmp_path, capsys):
    existing = tmp_path / "notes.txt"
    existing.write_text("keep me")
    for out, message in [(existing, f"--out {existing} is a file, not a directory"),
                         (existing / "sub", f"cannot create the build directory "
                                            f"{existing / 'sub'}")]:
        with pytest.raises(SystemExit) as exit_info:
            build_module.main(["--board", "mimas", "--out", str(out)])
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err
    assert existing.read_text() == "keep me"


def test_interrupted_build_exits_130_and_says_the_directory_is_incomplete(tmp_path, monkeypatch,
                                                                         capsys):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(build_module, "build", interrupted)
    status = build_module.main(["--board", "mimas", "--out", str(tmp_path / "b")])
    assert status == 130
    assert (f"interrupted: the build directory {tmp_path / 'b'} is incomplete"
            in capsys.readouterr().err)


# -- cycles ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("nodes, latency, wait_states", [(1, 40, False), (3, 60, True)])
def test_simulated_cycles_are_the_chains_own_counters(nodes, latency, wait_states):
    figures = simulate_update_cycles(FakeChain(nodes, latency=latency, wait_states=wait_states),
                                     updates=4)
    assert figures["update_latency_cycles"] == latency
    assert figures["update_count"] == 4
    # A start refused while busy is retried at once: accepted a few bus cycles after the end.
    assert latency < figures["update_interval_cycles"] <= latency + (12 if wait_states else 3)


class _HangingChain(Elaboratable):
    def __init__(self):
        self.chain = FakeChain(1)
        self.bus = self.chain.bus

    def elaborate(self, platform):
        m = Module()
        m.submodules.chain = self.chain
        m.d.comb += self.chain.hang.eq(1)
        return m


def test_simulated_cycles_give_up_on_a_chain_that_never_finishes():
    with pytest.raises(RuntimeError, match="did not finish"):
        simulate_update_cycles(_HangingChain(), max_cycles=500)


@pytest.mark.parametrize("nodes", [1, 6])
def test_schedule_cycles_agree_with_the_microprogram_schedule_report(nodes):
    text = microprogram().schedule_report(nodes)
    reported = int(re.search(rf"{nodes}-node chain .*?: (\d+) cycles", text).group(1))
    assert schedule_update_cycles(nodes)["update_latency_cycles"] == reported


# -- the build with stand-in tools ----------------------------------------------------------------

FAKE_YOSYS = """\
import json, os, re, sys
args = sys.argv[1:]
if "-V" in args:
    print("Yosys 0.0 (stand-in)"); sys.exit(0)
if "-p" in args:                       # linkdyn's own synthesis run
    script = args[args.index("-p") + 1]
    assert ("synth_xilinx -family xc6s" in script) or ("synth_ecp5" in script), script
    out = re.search(r"tee -q -o (\\S+) stat -json", script).group(1)
    cells = json.loads(os.environ["FAKE_CELLS"])
    json.dump({"design": {"num_cells_by_type": cells}, "modules": {}}, open(out, "w"))
else:                                  # Amaranth's build script: yosys -q -l top.rpt top.ys
    assert "top.ys" in args, args
    open("top.json", "w").write("{}")
"""

FAKE_NEXTPNR = """\
import json, os, sys
args = sys.argv[1:]
if "--version" in args:
    print("nextpnr-0.0 (stand-in)"); sys.exit(0)
assert "--timing-allow-fail" in args and "--85k" in args, args
report = args[args.index("--report") + 1]
used = {"TRELLIS_COMB": 3000, "TRELLIS_FF": 1200, "MULT18X18D": 24, "ALU54B": 0,
        "DP16KD": 29, "TRELLIS_IO": 7}
fmax = float(os.environ["FAKE_FMAX"])
constraint = float(os.environ.get("FAKE_CONSTRAINT", "100"))
json.dump({"fmax": {"$glbnet$clk": {"achieved": fmax, "constraint": constraint}},
           "utilization": {k: {"used": v, "available": 1000} for k, v in used.items()},
           "critical_paths": []}, open(report, "w"))
open(args[args.index("--textcfg") + 1], "w").write(".device LFE5U-85F\\n")
"""

FAKE_ECPPACK = """\
import sys
args = sys.argv[1:]
if "--version" in args:
    print("ecppack stand-in"); sys.exit(0)
open(args[args.index("--bit") + 1], "wb").write(b"\\xff\\x00bitstream")
"""


def _tool(directory, name, source):
    path = directory / name
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(source))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def stand_in_tools(tmp_path, monkeypatch):
    tools = tmp_path / "tools"
    tools.mkdir()
    monkeypatch.setenv("YOSYS", _tool(tools, "yosys", FAKE_YOSYS))
    monkeypatch.setenv("NEXTPNR_ECP5", _tool(tools, "nextpnr-ecp5", FAKE_NEXTPNR))
    monkeypatch.setenv("ECPPACK", _tool(tools, "ecppack", FAKE_ECPPACK))
    # No ISE on this PATH (only the stand-ins' directory and the system's basics).
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin")
    for tool in ("XST", "NGDBUILD", "MAP", "PAR", "BITGEN", "OPENFPGALOADER"):
        monkeypatch.delenv(tool, raising=False)
    return tools


def _report(out):
    report = json.loads((out / "report.json").read_text())
    assert not [field for field in REPORT_FIELDS if field not in report]
    assert (out / "report.txt").read_text().startswith("LinkDyn board build:")
    return report


def test_spartan6_build_reports_yosys_utilisation_and_exits_3_without_ise(
        stand_in_tools, tmp_path, monkeypatch):
    cells = {"LUT6": 1000, "LUT3": 200, "INV": 10, "RAM64M": 5, "SRLC32E": 3, "FDRE": 900,
             "FDSE": 11, "DSP48A1": 4, "RAMB16BWER": 3, "RAMB8BWER": 3, "CARRY4": 50}
    monkeypatch.setenv("FAKE_CELLS", json.dumps(cells))
    out = tmp_path / "sk"
    report = build(BOARDS["sk_xc6slx9"](1, chain="fake"), out=out, progress=lambda line: None)
    assert report["exit_status"] == build_module.EXIT_NEEDS_ISE == 3
    assert _report(out) == report
    assert report["status"] == "needs-ise" and "ISE 14.7" in report["message"]
    assert (report["board"], report["device"], report["nodes"]) == ("sk_xc6slx9", "xc6slx9", 1)
    assert report["chain"] == "fake" and report["clock_mhz"] == 50.0
    assert report["baudrate"] == 2_000_000
    assert report["luts"] == 1000 + 200 + 10 + 5 * 4 + 3
    assert report["ffs"] == 911 and report["dsps"] == 4
    assert report["brams"] == 4.5                      # RAMB8BWER counts half
    assert report["fits"] is True
    assert report["utilisation_percent"]["dsps"] == 25.0
    assert report["fmax_mhz"] is None and report["timing_met"] is None
    assert report["bitstream"] is None
    assert (out / "build_top.sh").exists() and (out / "top.ucf").exists()
    assert report["update_latency_cycles"] == schedule_update_cycles(1)["update_latency_cycles"]
    assert report["cycles_source"].startswith("model schedule, NOT a simulation")


def test_spartan6_build_with_synth_only_exits_5_for_a_design_that_does_not_fit(
        stand_in_tools, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_CELLS", json.dumps({"LUT6": 6000, "FDRE": 10, "DSP48A1": 20}))
    report = build(BOARDS["mimas"](1, chain="fake"), out=tmp_path / "m", synth_only=True,
                   progress=lambda line: None)
    assert report["exit_status"] == build_module.EXIT_DOES_NOT_FIT == 5
    assert report["status"] == "synthesis-only" and report["fits"] is False
    assert "does NOT fit (luts 6000 > 5720, dsps 20 > 16)" in report["message"]


def test_spartan6_build_with_synth_only_exits_0_for_a_design_that_fits(
        stand_in_tools, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_CELLS", json.dumps({"LUT6": 5720, "FDRE": 10, "DSP48A1": 16}))
    report = build(BOARDS["mimas"](1, chain="fake"), out=tmp_path / "m", synth_only=True,
                   progress=lambda line: None)
    assert (report["exit_status"], report["fits"]) == (0, True)
    assert report["utilisation_percent"]["luts"] == 100.0


@pytest.mark.parametrize("fmax, status, exit_status", [(123.4, "bitstream", 0),
                                                       (76.8, "timing-failed", 4)])
def test_ecp5_build_reports_nextpnr_fmax_and_utilisation(fmax, status, exit_status,
                                                        stand_in_tools, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_FMAX", str(fmax))
    out = tmp_path / "ulx3s"
    report = build(BOARDS["ulx3s"](2, clock_hz=100_000_000, chain="fake"), out=out,
                   progress=lambda line: None)
    assert _report(out) == report
    assert (report["status"], report["exit_status"]) == (status, exit_status)
    assert report["fmax_mhz"] == fmax and report["timing_met"] is (fmax >= 100)
    assert (report["luts"], report["ffs"], report["dsps"], report["brams"]) == (3000, 1200, 24, 29)
    assert report["device"] == "LFE5U-85F" and report["clock_mhz"] == 100.0
    assert report["bitstream"] == str(out / "top.bit") and (out / "top.bit").exists()
    assert report["baudrate"] == 3_000_000
    assert report["command"].endswith(f"--seed 1 --out {out}")


def test_ecp5_build_records_its_placement_seed(stand_in_tools, tmp_path, monkeypatch):
    """The seed goes to nextpnr and into the report's command (the build is reproduced by
    it: Fmax moves by several MHz from seed to seed)."""
    monkeypatch.setenv("FAKE_FMAX", "101.0")
    out = tmp_path / "ulx3s"
    report = build(BOARDS["ulx3s"](2, chain="fake"), out=out, seed=7, progress=lambda line: None)
    assert "--seed 7 --out" in report["command"]
    assert "--seed 7" in " ".join(json.loads((out / "build_top.json").read_text())["commands"][1])


@pytest.mark.parametrize("variables, passed", [(["SEED=2"], "--seed 2"), ([], None)])
def test_make_bitstream_passes_the_seed_to_the_build(variables, passed):
    line = bitstream_command(*variables)
    assert (passed in line) if passed else ("--seed" not in line)


def test_ecp5_build_command_line_returns_the_documented_status(stand_in_tools, tmp_path,
                                                               monkeypatch, capsys):
    monkeypatch.setenv("FAKE_FMAX", "80.0")
    monkeypatch.setenv("FAKE_CONSTRAINT", "75.0")
    status = build_module.main(["--board", "ulx3s", "--nodes", "1", "--clock-mhz", "75",
                                "--chain", "fake", "--out", str(tmp_path / "u")])
    assert status == 0                                  # 80 MHz >= 75 MHz
    assert "Fmax             80.00 MHz -> timing met" in capsys.readouterr().out


def test_ecp5_build_fails_with_status_1_when_a_tool_is_missing(stand_in_tools, tmp_path,
                                                               monkeypatch, capsys):
    monkeypatch.setenv("NEXTPNR_ECP5", str(tmp_path / "no-such-nextpnr"))
    status = build_module.main(["--board", "ulx3s", "--nodes", "1", "--chain", "fake",
                                "--out", str(tmp_path / "u")])
    assert status == build_module.EXIT_TOOL_FAILED == 1
    assert "nextpnr-ecp5 not found" in capsys.readouterr().err


def test_build_with_the_linkdyn_chain_reports_its_simulated_counters(stand_in_tools, tmp_path,
                                                                    monkeypatch):
    monkeypatch.setenv("FAKE_CELLS", json.dumps({"LUT6": 4000, "DSP48A1": 8}))
    top = BOARDS["mimas"](2, chain="linkdyn", policy="pipelined")
    report = build(top, out=tmp_path / "m", synth_only=True, progress=lambda line: None)
    assert (report["chain"], report["policy"]) == ("linkdyn", "pipelined")
    assert report["cycles_source"].startswith("simulation of this build's chain")
    # Pipelined: back-to-back updates overlap, so they start closer than one update lasts.
    assert 0 < report["update_interval_cycles"] < report["update_latency_cycles"]
    assert "--chain linkdyn --policy pipelined" in report["command"]


@pytest.mark.skipif(not os.environ.get("LINKDYN_LONG"), reason="real Yosys run (LINKDYN_LONG=1)")
def test_real_yosys_synthesis_of_a_one_node_xc6slx9_build_fits(tmp_path):
    report = build(BOARDS["sk_xc6slx9"](1), out=tmp_path / "sk", synth_only=True,
                   progress=lambda line: None)
    assert report["exit_status"] == 0 and report["fits"] is True
    assert report["luts"] > 100 and report["ffs"] > 100 and report["brams"] >= 1


# -- programming ----------------------------------------------------------------------------------

FAKE_LOADER = """\
import os, sys
open(os.environ["FAKE_LOADER_LOG"], "a").write(" ".join(sys.argv[1:]) + "\\n")
if "--detect" in sys.argv:
    sys.exit(0 if os.environ.get("FAKE_BOARD") else 1)
sys.exit(0)
"""


@pytest.fixture
def bitstream(tmp_path):
    path = tmp_path / "top.bit"
    path.write_bytes(b"\xff")
    return path


def test_program_says_so_when_openfpgaloader_is_missing(tmp_path, monkeypatch, bitstream,
                                                        capsys):
    monkeypatch.delenv("OPENFPGALOADER", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert program_module.main(["--board", "ulx3s", "--bitstream", str(bitstream)]) == 4
    assert "openFPGALoader not found" in capsys.readouterr().err


def test_program_says_so_when_no_board_is_attached(tmp_path, monkeypatch, bitstream, capsys):
    monkeypatch.setenv("OPENFPGALOADER", _tool(tmp_path, "openFPGALoader", FAKE_LOADER))
    monkeypatch.setenv("FAKE_LOADER_LOG", str(tmp_path / "log"))
    monkeypatch.delenv("FAKE_BOARD", raising=False)
    assert program_module.main(["--board", "ulx3s", "--bitstream", str(bitstream)]) == 6
    assert "no ULX3S 85F attached" in capsys.readouterr().err
    assert (tmp_path / "log").read_text() == "-b ulx3s --detect\n"


def test_program_loads_the_bitstream_into_sram_or_flash(tmp_path, monkeypatch, bitstream):
    monkeypatch.setenv("OPENFPGALOADER", _tool(tmp_path, "openFPGALoader", FAKE_LOADER))
    monkeypatch.setenv("FAKE_LOADER_LOG", str(tmp_path / "log"))
    monkeypatch.setenv("FAKE_BOARD", "1")
    assert program_module.main(["--board", "ulx3s", "--bitstream", str(bitstream)]) == 0
    assert program_module.main(["--board", "ulx3s", "--bitstream", str(bitstream),
                                "--flash"]) == 0
    assert (tmp_path / "log").read_text().splitlines() == [
        "-b ulx3s --detect", f"-b ulx3s -m {bitstream}",
        "-b ulx3s --detect", f"-b ulx3s -f {bitstream}"]


def test_program_needs_a_bitstream(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENFPGALOADER", _tool(tmp_path, "openFPGALoader", FAKE_LOADER))
    assert program_module.main(["--board", "ulx3s", "--bitstream",
                                str(tmp_path / "none.bit")]) == 5
    assert "build it first" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["atlys", "mimas", "sk_xc6slx9"])
def test_program_refuses_spartan6_boards_and_says_how_to_load_them(name, capsys):
    assert program_module.main(["--board", name]) == 3
    err = capsys.readouterr().err
    assert "ISE 14.7" in err and program_module.SPARTAN6_HINTS[name] in err


# -- the documentation table ----------------------------------------------------------------------

def test_summary_table_lists_a_build_and_replaces_only_the_marked_text(stand_in_tools, tmp_path,
                                                                       monkeypatch, capsys):
    monkeypatch.setenv("FAKE_CELLS", json.dumps({"LUT6": 2860, "FDRE": 1144, "DSP48A1": 4,
                                                 "RAMB16BWER": 8}))
    build(BOARDS["sk_xc6slx9"](1, chain="fake"), out=tmp_path / "sk", synth_only=True,
          progress=lambda line: None)
    doc = tmp_path / "performance.md"
    doc.write_text(f"# Performance\n\n## Boards\n\nbefore\n{summary.BEGIN}\nold table\n"
                   f"{summary.END}\nafter\n\n## Other\nkept\n")
    assert summary.main([str(tmp_path / "sk"), "--write-docs", str(doc)]) == 0
    text = doc.read_text()
    assert "old table" not in text
    assert all(part in text for part in ("before", "after", "## Other\nkept"))
    row = next(line for line in text.splitlines() if line.startswith("| SK-XC6SLX9"))
    cycles = schedule_update_cycles(1)["update_latency_cycles"]  # the microprogram's schedule
    assert row.startswith("| SK-XC6SLX9 | xc6slx9-2tqg144 | 1 | FakeChain (stand-in) | 50 | - | "
                          "2,860 (50 %) | 1,144 (10 %) | 4 (25 %) | 8 (25 %) | yes | "
                          f"{cycles} / {cycles} (schedule) | synthesis-only |")


def test_a_board_module_registers_its_top_by_name_and_id():
    from linkdyn.boards.common import BOARD_TOPS, BoardTop

    class ExampleTop(BoardTop):
        name = "example_board"
        board_id = 99

    try:
        assert BOARD_TOPS["example_board"] is ExampleTop
    finally:
        del BOARD_TOPS["example_board"]
    with pytest.raises(ValueError, match="Board id 1 of 'other_board' is taken by 'ulx3s'"):
        class OtherTop(BoardTop):
            name = "other_board"
            board_id = 1
    with pytest.raises(TypeError, match="Board 'no_id' must set board_id to an integer >= 1"):
        class NoIdTop(BoardTop):
            name = "no_id"
    assert "other_board" not in BOARD_TOPS and "no_id" not in BOARD_TOPS
    assert list(BOARDS) == ["ulx3s", "atlys", "mimas", "sk_xc6slx9"]
