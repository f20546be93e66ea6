"""A read of board 0's own node while its update waits behind a cut (Amaranth simulator).

A read of a node register waits until the node ends its running request (``docs/chain.md``,
*The register bus*). Board 0's ``distal`` request reads board 1's backward message word by
word; if the link to board 1 goes down after the first words came, the request stalls until
the restore, and a read of board 0's node used to wait for the base's whole timeout (65,536
cycles) before its ``error``. It is refused as soon as the stall meets a link known to be
down (``docs/distributed.md``, *Timeout*): the host gets the link-down error naming the link,
board 0's other registers and the control block answer meanwhile, and after the restore the
update ends with the golden model's words and the read answers. (With the default burst
frames the 6-word backward message comes in one frame, so board 0 never stalls in it; the
links here send one word per frame, ``link_parameters={"burst": 1}``, as a message split over
frames by the links would come.) Fails without the fix: no answer within 4,000 cycles.
"""

from amaranth.sim import Simulator

from linkdyn.gateware.actuator import LINK_DOWN
from linkdyn.gateware.distributed import DistributedChain
from linkdyn.model.golden import microprogram
from linkdyn.model.microprogram import SEGMENTS
from linkdyn.model.protocol import CONTROL_NODE, STATUS_BUSY, STATUS_DONE
from linkdyn.sim.chain_cases import build_case
from linkdyn.sim.chain_testbench import BusHost

REGISTERS = microprogram().registers
TAU = REGISTERS["tau"].address
#: The links' down timeout (LinkLayer's default): a cut is known this many cycles after it.
DOWN_TIMEOUT = 256


async def _access_timed(ctx, host, node, addr, limit):
    """One read; return ``(error, word, cycles)`` or None without an answer in ``limit``."""
    bus = host.bus
    ctx.set(bus.valid, 1)
    ctx.set(bus.node, node)
    ctx.set(bus.addr, addr)
    ctx.set(bus.we, 0)
    for cycle in range(1, limit + 1):
        _, _, ready, error, rdata = await ctx.tick().sample(bus.ready, bus.error, bus.rdata)
        if ready:
            ctx.set(bus.valid, 0)
            return bool(error), int(rdata), cycle
    ctx.set(bus.valid, 0)
    return None


def test_a_read_of_board_0_stalled_behind_a_cut_is_refused_at_once_then_answers():
    """2 boards, the base's timeout as in the board tops: hop 0 cut while board 0's distal
    request has the first words of board 1's message. A read of board 0's node (``m``, then
    ``tau``) is refused within a few cycles (LINK_DOWN names hop 0; STATUS busy, not done;
    board 0's link window answers); after the restore the update ends, every node's ``tau``
    is the golden model's word, and the same reads give their words."""
    n = 2
    case = build_case({"robot": f"random:{n}:41", "states": 1, "seed": 41, "wrench": "random"})
    dut = DistributedChain(n, bits=5, link_parameters={"burst": 1})
    assert dut.cores[0]._timeout == 1 << 16
    host = BusHost(dut)
    node0 = dut.nodes[0]
    distal = SEGMENTS.index("distal")
    m_word = case.constants[0]["m"]
    seen = {}

    async def bench(ctx):
        for i, words in enumerate(case.constants):
            for name, word in words.items():
                assert await host.write(ctx, i, REGISTERS[name].address, word), (i, name)
        for name, word in case.base_motion.items():
            assert await host.write(ctx, 0, REGISTERS[name].address, word)
        for i, words in enumerate(case.inputs[0]):
            for name, word in words.items():
                assert await host.write(ctx, i, REGISTERS[name].address, word), (i, name)
        assert await host.start(ctx)
        for _ in range(20_000):       # board 0's distal runs on the first words of the message
            await ctx.tick()
            if ctx.get(node0.busy) and ctx.get(node0.segment) == distal:
                break
        else:
            raise AssertionError("board 0's distal request did not start")
        ctx.set(dut.cut, 1)
        await host.tick(ctx, 2 * DOWN_TIMEOUT)
        seen["stalled"] = bool(ctx.get(node0.stall))
        seen["m"] = await _access_timed(ctx, host, 0, REGISTERS["m"].address, 4_000)
        if seen["m"] is None:
            return                  # (the base is still waiting: checked below)
        seen["tau"] = await _access_timed(ctx, host, 0, TAU, 4_000)
        seen["link_down"] = await host.access(ctx, CONTROL_NODE, LINK_DOWN)
        seen["status"] = await host.control(ctx, "STATUS")
        seen["window"] = await host.access(ctx, 0, 0xE8)     # board 0's downstream status
        ctx.set(dut.cut, 0)
        for _ in range(100_000):
            status = await host.control(ctx, "STATUS")
            if not status & STATUS_BUSY:
                break
        seen["status_after"] = status
        seen["tau_after"] = [await host.read(ctx, i, TAU) for i in range(n)]
        seen["m_after"] = await host.read(ctx, 0, REGISTERS["m"].address)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen["stalled"], "board 0's distal request waits for a word from behind the cut"
    for name in ("m", "tau"):
        assert seen[name] is not None, f"the read of board 0's {name} was not answered"
        error, _, cycles = seen[name]
        assert error and cycles <= 64, (name, seen[name])
    assert seen["link_down"] == (False, 1)
    assert seen["status"] & STATUS_BUSY and not seen["status"] & STATUS_DONE
    assert seen["window"][0] is False and seen["window"][1] & 1 == 0, "hop 0 reads down"
    assert seen["status_after"] & STATUS_DONE and not seen["status_after"] & STATUS_BUSY
    assert seen["tau_after"] == [int(w) for w in case.tau_words[0]]
    assert seen["m_after"] == int(m_word)
