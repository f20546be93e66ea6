"""The distributed benches' utilisation is of the core elaborated as the board builds elaborate
it: for the family's board platform (:func:`linkdyn.bench.distributed.board_platform`), so on
Spartan-6 the ROMs that platform places in block RAM
(:data:`linkdyn.gateware.node.SCHEDULE_ROM_STYLE` and its kin) are in block RAM in the
netlist Yosys is given. Yosys itself is replaced by a stand-in that keeps the RTLIL text.
"""

from pathlib import Path

import pytest

from linkdyn.bench import distributed, distributed_pipelined
from linkdyn.boards.mimas import MimasTop
from linkdyn.boards.ulx3s import ULX3STop

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


def _rom_styles(monkeypatch, module, call):
    seen = {}

    def fake_yosys(family, name, directory, **keywords):
        seen["family"] = family
        seen["text"] = Path(directory, name).read_text()
        return {"luts": 0, "ffs": 0, "dsps": 0, "brams": 0}

    monkeypatch.setattr(module, "yosys_utilisation", fake_yosys)
    call()
    styles = [line.split()[-1].strip('"') for line in seen["text"].splitlines()
              if "rom_style" in line]
    return seen["family"], styles


def test_board_platform_is_the_boards_own():
    assert isinstance(distributed.board_platform("xc6s"), MimasTop.platform_class)
    assert isinstance(distributed.board_platform("ecp5"), ULX3STop.platform_class)
    with pytest.raises(ValueError, match="'xc6s' or 'ecp5'.*'ice40'"):
        distributed.board_platform("ice40")


def test_sequential_middle_board_on_spartan6_has_its_roms_in_block_ram(monkeypatch):
    family, styles = _rom_styles(monkeypatch, distributed,
                                 lambda: distributed.synthesize("xc6s"))
    assert family == "xc6s"
    # The node's schedule ROM at least; every ROM that asks, asks for block RAM.
    assert styles and set(styles) == {"block"}


def test_pipelined_middle_board_on_ecp5_keeps_its_roms_in_logic(monkeypatch):
    family, styles = _rom_styles(
        monkeypatch, distributed_pipelined,
        lambda: distributed_pipelined.synthesize_pipelined("ecp5", banks=2))
    assert family == "ecp5"
    assert styles and set(styles) == {"logic"}


def test_utilisation_rows_of_both_families_and_a_message():
    lines = distributed.utilisation_lines({
        "xc6s": {"luts": 5_148, "ffs": 2_918, "dsps": 4, "brams": 11.5},
        "ecp5": "not run: no yosys"})
    assert "elaborated for the family's board platform" in lines[0]
    # 5,148 / 5,720 = 0.9000 -> 90 %.
    assert lines[-2] == ("| Spartan-6 (`synth_xilinx -family xc6s`) | 5,148 | 2,918 | 11.5 | 4 "
                         "| 90% |")
    assert lines[-1] == "| ECP5 (`synth_ecp5`) | not run: no yosys | | | | |"
