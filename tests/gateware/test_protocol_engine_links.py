"""The protocol engine's access rules on a distributed chain equal ProtocolSpec(boards=n), and
the link words the engine lets through are the ones ActuatorCore answers."""

from amaranth.sim import Simulator

from linkdyn.gateware import actuator
from linkdyn.gateware.protocol import AccessCheck, ProtocolEngine
from linkdyn.model import protocol as P


def test_link_window_constants_equal_the_gateware():
    assert actuator.LINK_WINDOW == P.LINK_WINDOW
    assert tuple(actuator.LINK_WINDOW_FIELDS) == P.LINK_FIELDS
    assert actuator.LINK_DOWN == P.control_register("LINK_DOWN").address


def test_access_check_follows_the_spec_with_links():
    spec = P.ProtocolSpec(3, boards=3)
    dut = AccessCheck(spec)
    cases = [(node, addr) for node in (0, 2, 3, P.CONTROL_NODE) for addr in range(0x100)]

    async def bench(ctx):
        for node, addr in cases:
            ctx.set(dut.node, node)
            ctx.set(dut.addr, addr)
            await ctx.delay(1e-9)
            access = spec.access(node, addr)
            assert ctx.get(dut.exists) == access.exists, (node, hex(addr))
            if access.exists:
                assert ctx.get(dut.writable) == access.writable, (node, hex(addr))
                assert ctx.get(dut.local) == (access.owner == "engine"), (node, hex(addr))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()


def test_engine_spec_carries_the_board_count():
    engine = ProtocolEngine(4, timeout_cycles=40, step_timeout_cycles=3000, boards=4)
    assert engine.spec.boards == 4
    assert engine.spec.map_check == P.ProtocolSpec(4, boards=4).map_check
