"""Board builds with joint controllers and the local loop (``--controllers --local-loop``,
``make bitstream CONTROLLERS=1 LOCAL_LOOP=1``, ``BoardTop(..., controllers=True,
local_loop=True)``, ``BoardCore(..., controllers=True, local_loop=True)``).

References: the protocol's own definition of such a board (``ProtocolSpec(controllers=True,
local_loop=True)``: its INFO words, LOCAL_MULTIPLE in its control map), and the default build's
Verilog, which the option must leave as it was. The synthesis is a stand-in Yosys (known cell
counts), as in tests/boards/test_board_build_controllers.py; no place and route.
"""

import json

import pytest
from amaranth.back import verilog

from linkdyn.boards import BOARDS
from linkdyn.boards import build as build_module
from linkdyn.boards.core import BoardCore
from linkdyn.gateware.chain import LinkDynChain
from linkdyn.gateware.controlled_chain import ControlledChain
from linkdyn.gateware.cordic import STEP_CYCLES
from linkdyn.model import protocol as P
from support import stand_in_tools as yosys_stand_in
from support.make import bitstream_command

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


@pytest.fixture
def stand_in_yosys(tmp_path, monkeypatch):
    yosys_stand_in.install(tmp_path, monkeypatch)
    for tool in ("XST", "NGDBUILD", "MAP", "PAR", "BITGEN"):
        monkeypatch.delenv(tool, raising=False)


def test_board_top_with_the_local_loop_builds_it_and_advertises_it():
    top = BOARDS["mimas"](1, controllers=True, local_loop=True)
    chain = top.core.chain
    assert isinstance(chain, ControlledChain) and chain.local_loop and chain.chain.local_loop
    assert [node.cordic_step_cycles for node in chain.chain.nodes] == [STEP_CYCLES["xc6s"]]
    spec = top.core.hostlink.spec
    reference = P.ProtocolSpec(1, controllers=True, local_loop=True)
    assert spec.local_loop and spec.build_info()["CONTROLLERS"] == 3
    assert spec.map_check == reference.map_check
    assert "LOCAL_MULTIPLE" in [reg.name for reg in spec.control_registers]
    assert top.core.local_loop
    # Without the option: the controlled chain without the local loop, CONTROLLERS = 1.
    plain = BOARDS["mimas"](1, controllers=True)
    assert not plain.core.chain.local_loop and not plain.core.local_loop
    assert plain.core.hostlink.spec.build_info()["CONTROLLERS"] == 1
    assert "LOCAL_MULTIPLE" not in [r.name for r in plain.core.hostlink.spec.control_registers]


def test_board_core_takes_the_local_loop_from_a_chain_passed_in():
    core = BoardCore(2, clock_hz=12_000_000, controllers=True,
                     chain=ControlledChain(2, local_loop=True))
    assert core.local_loop and core.hostlink.spec.build_info()["CONTROLLERS"] == 3


@pytest.mark.parametrize("kwargs, error, match", [
    ({"local_loop": 1, "controllers": True}, TypeError, "local_loop must be a bool, not 1"),
    ({"local_loop": True}, ValueError, "built with joint controllers"),
    ({"local_loop": True, "controllers": True, "chain": ControlledChain(2)}, ValueError,
     "needs a chain built with the local loop, not ControlledChain without it"),
    ({"local_loop": True, "chain": LinkDynChain(2, local_loop=True)}, ValueError,
     "built with joint controllers"),
])
def test_board_core_refuses_a_local_loop_it_cannot_build(kwargs, error, match):
    with pytest.raises(error, match=match):
        BoardCore(2, clock_hz=12_000_000, **kwargs)


@pytest.mark.parametrize("kwargs, error, match", [
    ({"local_loop": "yes", "controllers": True}, TypeError, "local_loop must be a bool"),
    ({"local_loop": True}, ValueError, "built with the joint controllers"),
])
def test_board_top_refuses_a_local_loop_without_controllers(kwargs, error, match):
    with pytest.raises(error, match=match):
        BOARDS["mimas"](1, **kwargs)


def test_the_default_board_core_verilog_is_unchanged_by_the_option():
    """``local_loop=False`` (the default) builds exactly the core built before the option:
    the same Verilog, byte for byte, as a core given the controlled chain without it."""
    default = verilog.convert(BoardCore(1, clock_hz=12_000_000, controllers=True),
                              name="top", emit_src=False)
    explicit = verilog.convert(BoardCore(1, clock_hz=12_000_000, controllers=True,
                                         chain=ControlledChain(1), local_loop=False),
                               name="top", emit_src=False)
    local = verilog.convert(BoardCore(1, clock_hz=12_000_000, controllers=True,
                                      local_loop=True), name="top", emit_src=False)
    assert default == explicit
    assert local != default


@pytest.mark.parametrize("argv, message", [
    (["--local-loop"], "--local-loop is built with the joint controllers"),
    (["--local-loop", "--distributed", "--role", "middle"],
     "--distributed builds no local loop"),
])
def test_build_command_line_refuses_the_local_loop_without_controllers(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        build_module.main(["--board", "mimas", *argv])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


def test_build_with_the_local_loop_reports_it(stand_in_yosys, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_CELLS", json.dumps({"LUT6": 4400, "FDRE": 3100, "DSP48A1": 8,
                                                 "RAMB8BWER": 3, "RAMB16BWER": 3}))
    out = tmp_path / "m"
    status = build_module.main(["--board", "mimas", "--nodes", "1", "--controllers",
                                "--local-loop", "--synth-only", "--out", str(out)])
    assert status == 0
    report = json.loads((out / "report.json").read_text())
    assert report["controllers"] is True and report["local_loop"] is True
    assert "--controllers --local-loop" in report["command"]
    assert "the local loop" in (out / "report.txt").read_text()
    assert "with the local loop" in capsys.readouterr().out
    # The ISE build tree's Verilog has the chain's local update (its register) in it.
    assert "local_update" in (out / "top.v").read_text()


@pytest.mark.parametrize("variables, passed", [
    (["CONTROLLERS=1", "LOCAL_LOOP=1"], True), (["CONTROLLERS=1", "LOCAL_LOOP=0"], False),
    (["CONTROLLERS=1"], False),
])
def test_make_bitstream_passes_local_loop_1_to_the_build(variables, passed):
    line = bitstream_command("BOARD=mimas", *variables)
    assert "--controllers" in line
    assert ("--local-loop" in line) is passed
