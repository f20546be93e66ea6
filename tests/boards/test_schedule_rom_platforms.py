"""Where the node's schedule ROM, the joint controller's program ROM and the CORDIC's angle ROM
go (:data:`linkdyn.gateware.node.SCHEDULE_ROM_STYLE`,
:data:`linkdyn.gateware.controller.PROGRAM_ROM_STYLE`,
:data:`linkdyn.gateware.cordic.ANGLE_ROM_STYLE`): block RAM when elaborated for a
Spartan-6 platform (the Mimas' own platform class), logic for an ECP5 platform and without a
platform; the same words either way (the attribute only tells synthesis where to put them:
the schedule ROM read back through the Amaranth simulator on every row).
"""

import pytest
from amaranth.back import rtlil
from amaranth.sim import Simulator

from linkdyn.boards.mimas import MimasTop
from linkdyn.boards.ulx3s import ULX3STop
from linkdyn.gateware.controller import JointController
from linkdyn.gateware.cordic import CordicArctangent
from linkdyn.gateware.node import LinkDynNode, ScheduleRom

pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


def _rom():
    node = LinkDynNode()
    return node, ScheduleRom(node._slot_layout, node.rom)


def _style(platform, design=None):
    design = design or _rom()[1]
    text = rtlil.convert(design, name="top", platform=platform)
    styles = {line.split()[-1].strip('"') for line in text.splitlines()
              if "rom_style" in line}
    assert len(styles) == 1, styles
    return styles.pop()


def test_schedule_rom_is_block_ram_on_spartan6_and_logic_elsewhere():
    assert _style(MimasTop.platform_class()) == "block"
    assert _style(ULX3STop.platform_class()) == "logic"
    assert _style(None) == "logic"


def test_controller_program_rom_is_block_ram_on_spartan6_and_logic_elsewhere():
    assert _style(MimasTop.platform_class(), JointController()) == "block"
    assert _style(ULX3STop.platform_class(), JointController()) == "logic"
    assert _style(None, JointController()) == "logic"


def test_schedule_rom_reads_every_row():
    node, rom = _rom()
    rows = [rom.data.shape().const(row).as_value().value for row in node.rom]
    seen = []

    async def bench(ctx):
        for index in range(len(rows)):
            ctx.set(rom.addr, index)
            await ctx.tick()
            seen.append(ctx.get(rom.data.as_value()))

    sim = Simulator(rom)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen == rows


def test_cordic_angle_rom_of_one_cycle_steps_is_block_ram_on_spartan6_and_logic_elsewhere():
    assert _style(MimasTop.platform_class(), CordicArctangent(step_cycles=1)) == "block"
    assert _style(ULX3STop.platform_class(), CordicArctangent(step_cycles=1)) == "logic"
    assert _style(None, CordicArctangent(step_cycles=1)) == "logic"
