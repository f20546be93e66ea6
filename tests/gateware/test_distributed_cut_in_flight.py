"""A link cut while a register access to a board behind it is under way (Amaranth simulator).

The base board answers an access to a board behind a link it knows is down at once; an access
already on its way when the link goes down used to wait for the base's whole timeout
(``ActuatorCore(timeout=)``, 65,536 cycles by default, as in the board tops) with the base's
bus held. With joint controllers and the CONTROL_PERIOD timer that starved the boards in front
of the cut: the step sequencer's next HOLD round could not reach them, so board 0 latched
``message_watchdog`` (1.5 periods, about 5,100 cycles at 2 boards through the host) although it
was never cut off. Here: the access is refused as soon as the link is down (a few hundred
cycles, the links' down timeout), and the late request the boards behind execute after the
restore is never taken for another access's answer. With ``LINKDYN_LONG=1`` (about a minute
each): the same for a write; 2 boards with controllers on the timer, hop 0 cut in the middle
of a sequencer command to board 1: board 1 reaches its safe state within two periods, board 0
never faults nor stops driving, before or after the restore (fails without the fix: board 0
off 1.55 periods after the cut); and 3 boards where the late reply of a refused read of board
2 reaches the base while it waits for a read of board 1 that would carry the same tag if the
four tags were used in turn (fails without the base's guard of the given-up tags: the read
of board 1 returns board 2's word); and 2 boards with controllers where the host's read of
board 1 right after the restore comes while board 1 runs the step's FEEDBACK the link
repeated late (fails if board 1 drops it: no answer, the base waits its whole timeout).
"""

import pytest
from amaranth.sim import Simulator

from linkdyn.gateware.actuator import LINK_DOWN, LINK_WORDS
from linkdyn.gateware.controlled_actuator import ControlledDistributedChain
from linkdyn.gateware.distributed import DistributedChain
from linkdyn.model import protocol as P
from linkdyn.model.controller import FAULTS, WORD, ControllerConfig, decode_fault
from linkdyn.model.golden import microprogram
from linkdyn.sim.chain_testbench import BusHost

from support import LONG

REGISTERS = microprogram().registers
#: The links' down timeout (LinkLayer's default): a cut is known this many cycles after it.
DOWN_TIMEOUT = 256


def _run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


async def _access_with_cut(ctx, host, cut, node, addr, write=None, *, after, limit):
    """One access; ``cut`` set ``after`` cycles into it (the request on its way). Return
    ``(error, word, cycles)``; raise AssertionError if no answer in ``limit`` cycles."""
    bus = host.bus
    ctx.set(bus.valid, 1)
    ctx.set(bus.node, node)
    ctx.set(bus.addr, addr)
    ctx.set(bus.we, write is not None)
    ctx.set(bus.wdata, (write or 0) & 0xFFFFFFFF)
    for cycle in range(1, limit + 1):
        if cycle == after:
            ctx.set(cut, 1)
        _, _, ready, error, rdata = await ctx.tick().sample(bus.ready, bus.error, bus.rdata)
        if ready:
            ctx.set(bus.valid, 0)
            return bool(error), int(rdata), cycle
    raise AssertionError(f"no answer within {limit} cycles of an access whose link was cut "
                         f"under way")


async def _link_up(ctx, host, limit=20_000):
    for _ in range(limit // 10):
        error, down = await host.access(ctx, P.CONTROL_NODE, LINK_DOWN)
        assert not error
        if down == 0 and not (await host.access(ctx, 1, REGISTERS["m"].address))[0]:
            return
        await host.tick(ctx, 10)
    raise AssertionError("the link did not come up")


# The write variant with LINKDYN_LONG=1 (about 8 s each).
@pytest.mark.parametrize("write", [False] + ([True] if LONG else []),
                         ids=["read", "write"][:1 + int(LONG)])
def test_an_access_under_way_when_its_link_is_cut_is_refused_once_the_link_is_down(write):
    """2 boards, the base's timeout as in the board tops (65,536 cycles): hop 0 cut 6 cycles
    into an access to board 1 (its request on the link). The access is refused within the
    links' down timeout plus a margin (not after the timeout); board 0 answers meanwhile;
    after the restore board 1's words read as they were written: the late answer of the
    refused access (delivered after the restore) is never another access's answer."""
    dut = DistributedChain(2, bits=5)
    assert dut.cores[0]._timeout == 1 << 16
    host = BusHost(dut)
    q, qd = REGISTERS["q"].address, REGISTERS["qd"].address
    seen = {}

    async def bench(ctx):
        await _link_up(ctx, host)
        assert await host.write(ctx, 1, q, 0x1234)
        assert await host.write(ctx, 1, qd, 0x5678)
        error, _, cycles = await _access_with_cut(
            ctx, host, dut.cut, 1, q, 0x4321 if write else None, after=6, limit=4 * DOWN_TIMEOUT)
        seen["error"], seen["cycles"] = error, cycles
        # Board 0 answers; board 1 is refused at once.
        seen["board0"] = await host.access(ctx, 0, REGISTERS["m"].address)
        seen["board1"] = await host.access(ctx, 1, qd)
        seen["link_down"] = (await host.access(ctx, P.CONTROL_NODE, LINK_DOWN))[1]
        ctx.set(dut.cut, 0)
        await _link_up(ctx, host)
        seen["after"] = [await host.read(ctx, 1, address) for address in (qd, q, qd)]
        assert await host.write(ctx, 1, q, 0x2468)
        seen["after_write"] = [await host.read(ctx, 1, address) for address in (q, qd)]

    _run(dut, bench)
    assert seen["error"], "refused: no value"
    assert seen["cycles"] <= 2 * DOWN_TIMEOUT, seen["cycles"]
    assert seen["board0"][0] is False
    assert seen["board1"][0] is True
    assert seen["link_down"] == 1
    # The refused write may take effect after the restore (it was on its way); the reads
    # give the words as they are, each its own.
    assert seen["after"] == [0x5678, 0x4321 if write else 0x1234, 0x5678]
    assert seen["after_write"] == [0x2468, 0x5678]


# -- joint controllers on the period timer ----------------------------------------------------

_WORD = {w.name: w.address for w in P.CONTROLLER_WORDS}
_MESSAGE_WATCHDOG = next(code for code, (name, _) in FAULTS.items()
                         if name == "message_watchdog")


def _word(x):
    return int(WORD.encode(x)) & 0xFFFFFFFF


@pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1: about a minute of 2 boards with "
                    "controllers in the Amaranth simulator")
def test_a_cut_under_a_step_command_never_faults_the_board_in_front():
    """2 boards with controllers on the CONTROL_PERIOD timer, the base's timeout as in the
    board tops: hop 0 cut while the step sequencer's command to board 1 is under way. Board 1
    (behind) is at zero current with enable low within two periods and latches
    message_watchdog; board 0 (in front) never faults nor stops driving, in the cut and for
    three periods after the restore; FAULTS names board 1 only, and the steps resume."""
    n = 2
    dut = ControlledDistributedChain(n, bits=5)
    assert dut.chain.cores[0]._timeout == 1 << 16
    host = BusHost(dut)
    config = ControllerConfig(kp=100.0, kd=10.0, lim_p=50.0, lim_d=50.0, guard_kp=10.0,
                              guard_kv=1.0, guard_small=0.5, guard_large=5.0, q_min=-1.0,
                              q_max=1.0, qd_max=2.0, q_hard_min=-1.5, q_hard_max=1.5,
                              qd_hard_max=3.0, tau_max=200.0, current_per_torque=0.5,
                              watchdog_cycles=0, watchdog_message=True)
    words = {name: word for name, word in config.encode().items() if word}
    seen = {"front_faulted": None, "front_stopped": None, "safe_at": None}
    steps_address = P.control_register("CONTROL_STEPS").address

    async def write(ctx, node, addr, word):
        for _ in range(200):        # refused while a step runs: tried again
            if await host.write(ctx, node, addr, word):
                return
        raise AssertionError(f"write to {node}:{addr:#x} refused 200 times")

    async def read(ctx, node, addr):
        error, word = await host.access(ctx, node, addr, limit=200_000)
        assert not error, (node, hex(addr))
        return word

    def watch(ctx, cycle):
        if seen["front_faulted"] is None and ctx.get(dut.board_fault[0]):
            seen["front_faulted"] = cycle
        if seen["front_stopped"] is None and not (ctx.get(dut.actuator[0].enable)
                                                  and ctx.get(dut.actuator[0].i_ref)):
            seen["front_stopped"] = cycle
        if seen["safe_at"] is None and not ctx.get(dut.actuator[1].enable) \
                and ctx.get(dut.actuator[1].i_ref) == 0:
            seen["safe_at"] = cycle

    async def bench(ctx):
        for i in range(n):
            ctx.set(dut.sensor[i].q, _word(1.2))        # beyond q_max: a current flows
            for name, word in words.items():
                await write(ctx, i, _WORD[name], word)
            for word in P.REFERENCE_WORDS:
                await write(ctx, i, word.address, 0)
        await write(ctx, P.CONTROL_NODE, P.control_register("CONTROL").address, P.CONTROL_STEP)
        await read(ctx, P.CONTROL_NODE, steps_address)
        latency = await read(ctx, P.CONTROL_NODE,
                             P.control_register("CONTROL_LATENCY_CYCLES").address)
        period = seen["period"] = latency * 4 // 3
        await write(ctx, P.CONTROL_NODE, P.control_register("CONTROL_PERIOD").address, period)
        seen["steps_before"] = await read(ctx, P.CONTROL_NODE, steps_address)
        # The timer's first step: wait for its sequencer's command to board 1, then cut hop 0
        # a few cycles into it (the command on the link).
        chain_bus = dut.chain.bus
        for _ in range(3 * period):
            await ctx.tick()
            if ctx.get(chain_bus.valid) and ctx.get(chain_bus.node) == 1:
                break
        else:
            raise AssertionError("no step command to board 1")
        await host.tick(ctx, 6)
        ctx.set(dut.cut, 1)
        seen["drive_at_cut"] = [(ctx.get(dut.actuator[i].enable), ctx.get(dut.actuator[i].i_ref))
                                for i in range(n)]
        for cycle in range(1, 3 * period + 1):
            await ctx.tick()
            watch(ctx, cycle)
        ctx.set(dut.cut, 0)
        for cycle in range(3 * period + 1, 6 * period + 1):
            await ctx.tick()
            watch(ctx, cycle)
        seen["fault_words"] = [await read(ctx, i, _WORD["fault"]) for i in range(n)]
        seen["faults"] = await read(ctx, P.CONTROL_NODE, P.control_register("FAULTS").address)
        seen["steps_after"] = await read(ctx, P.CONTROL_NODE, steps_address)

    _run(dut, bench)
    period = seen["period"]
    print(f"\nperiod {period} cycles; board 1 safe {seen['safe_at']} cycles after the cut; "
          f"board 0 faulted at {seen['front_faulted']}, stopped at {seen['front_stopped']}")
    assert all(enable and i_ref for enable, i_ref in seen["drive_at_cut"])
    assert seen["front_faulted"] is None and seen["front_stopped"] is None
    assert seen["safe_at"] is not None and seen["safe_at"] <= 2 * period
    assert seen["fault_words"][0] == 0
    code, cause = decode_fault(seen["fault_words"][1])
    assert code == _MESSAGE_WATCHDOG and cause == 1 << (_MESSAGE_WATCHDOG - 1), \
        hex(seen["fault_words"][1])
    assert seen["faults"] == 0b10
    assert seen["steps_after"] > seen["steps_before"] + 1, "the steps resumed"


# -- a late reply is never another access's answer -----------------------------------------------

@pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1: about a minute of 3 boards in the "
                    "Amaranth simulator")
def test_the_late_reply_of_a_refused_access_is_never_taken_for_another_answer():
    """3 boards: a read of board 2 is under way when hop 1 (board 1 to 2) is cut; it is
    refused, and board 1 (in front) is read three times meanwhile. After the restore the read
    reaches board 2 and its reply comes back late: the moment it reaches board 1, board 1 is
    read again, so the late reply arrives at the base while the base waits for that read, the
    fourth access after the refused one (the refused one's tag again, were the four tags used
    in turn). The read gives board 1's word, and so does every other read of board 1."""
    dut = DistributedChain(3, bits=5)
    host = BusHost(dut)
    q = REGISTERS["q"].address
    board1, board2 = 0x0B0B0B, 0x0A0A0A
    # counting: board 2's own replies (its write's echo, the reads of it) are not late.
    seen = {"late_at_board1": 0, "late_at_base": 0, "counting": False, "wrong": []}
    reply_word = LINK_WORDS["BUS_REPLY"]

    def watcher(rx, key):
        async def watch(ctx):
            async for _, _, valid, direction, word, data in ctx.tick().sample(
                    rx.valid, rx.payload.direction, rx.payload.word, rx.payload.data):
                if valid and direction == 1 and word == reply_word and data == board2 \
                        and seen["counting"]:
                    seen[key] += 1
        return watch

    async def read1(ctx):
        word = await host.read(ctx, 1, q) & 0xFFFFFFFF
        if word != board1:
            seen["wrong"].append(hex(word))

    async def bench(ctx):
        await _link_up(ctx, host)
        assert await host.write(ctx, 1, q, board1)
        assert await host.write(ctx, 2, q, board2)
        await host.tick(ctx, 4)
        seen["counting"] = True
        # The read of board 2, hop 1 cut under way (the request stays before the cut).
        bus = host.bus
        ctx.set(bus.valid, 1)
        ctx.set(bus.node, 2)
        ctx.set(bus.addr, q)
        ctx.set(bus.we, 0)
        for cycle in range(1, 4 * DOWN_TIMEOUT + 1):
            if cycle == 6:
                ctx.set(dut.cut, 0b10)
            _, _, ready, error = await ctx.tick().sample(bus.ready, bus.error)
            if ready:
                ctx.set(bus.valid, 0)
                break
        else:
            raise AssertionError("the read of board 2 was not answered")
        seen["refused"] = bool(error)
        for _ in range(3):
            await read1(ctx)
        ctx.set(dut.cut, 0)
        for _ in range(20_000):
            await ctx.tick()
            if seen["late_at_board1"]:
                break
        else:
            raise AssertionError("the late reply did not come")
        seen["base_before"] = seen["late_at_base"]
        await read1(ctx)                # in flight when the late reply reaches the base
        await host.tick(ctx, 200)
        for _ in range(4):
            await read1(ctx)
        seen["counting"] = False
        seen["board2"] = await host.read(ctx, 2, q)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.add_testbench(watcher(dut.cores[1].downstream.rx_words, "late_at_board1"),
                      background=True)
    sim.add_testbench(watcher(dut.cores[0].downstream.rx_words, "late_at_base"),
                      background=True)
    sim.run()
    assert seen["refused"], "board 2 is behind the cut"
    assert seen["base_before"] == 0 and seen["late_at_base"] == 1, seen
    assert seen["wrong"] == [], "a late reply was taken for a read of board 1"
    assert seen["board2"] == board2


# -- a request that comes while a given-up one runs ------------------------------------------------

@pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1: about a minute of 2 boards with "
                    "controllers in the Amaranth simulator")
def test_a_request_behind_a_late_one_is_run_after_it_not_dropped():
    """2 boards with controllers, host-driven steps: hop 0 cut while a step's FEEDBACK command
    to board 1 is under way (the step is refused there and holds the boards). At the restore
    the link repeats the FEEDBACK, and board 1 runs it late (its controller's feedback and
    three node writes); the host's read of board 1, sent as soon as LINK_DOWN clears, comes
    while that runs. It is answered with board 1's word within a few hundred cycles (a board
    that dropped it would leave the base waiting its whole timeout)."""
    n = 2
    dut = ControlledDistributedChain(n, bits=5)
    host = BusHost(dut)
    kp = _WORD["kp"]
    seen = {}

    async def bench(ctx):
        await _link_up(ctx, host)
        for i in range(n):
            assert await host.write(ctx, i, kp, 0x100 + i)
        chain_bus = dut.chain.bus
        assert await host.write(ctx, P.CONTROL_NODE, P.control_register("CONTROL").address,
                                P.CONTROL_STEP)
        for _ in range(20_000):
            await ctx.tick()
            if ctx.get(chain_bus.valid) and ctx.get(chain_bus.node) == 1:
                break
        else:
            raise AssertionError("no step command to board 1")
        await host.tick(ctx, 6)
        ctx.set(dut.cut, 1)
        await host.tick(ctx, 4 * DOWN_TIMEOUT)
        ctx.set(dut.cut, 0)
        for _ in range(5_000):
            error, down = await host.access(ctx, P.CONTROL_NODE, LINK_DOWN)
            assert not error
            if down == 0:
                break
        else:
            raise AssertionError("the link did not come up")
        start = host.cycle
        seen["read"] = await host.access(ctx, 1, kp, limit=4_000)
        seen["cycles"] = host.cycle - start
        seen["kp"] = [await host.read(ctx, i, kp) for i in range(n)]

    _run(dut, bench)
    print(f"\nthe read of board 1 after the restore: {seen['cycles']} cycles")
    assert seen["read"] == (False, 0x101)
    assert seen["kp"] == [0x100, 0x101]
