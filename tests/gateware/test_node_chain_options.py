"""The node's chain options equal the golden model: split requests, inbox stalls, interlock, banks.

A :class:`~linkdyn.gateware.node.LinkDynNode` as the chain uses it (``split_joint``,
``split_local``, ``interlock``, ``inbox`` on both mailboxes, 4 banks) runs UR5 link 4 for two
states interleaved in two banks, in an order a pipelined chain produces
(``joint(a) forward(a) local(a) joint(b) forward(b) backward(a) local(b) backward(b)``); the
testbench plays both neighbours' mailboxes and lets every word arrive after a random delay, so
that the node stalls on missing words. Every word the node sends, in each bank, must equal the
golden model's; the default node (no options) is checked elsewhere (``test_node.py``).
Run back to back (each request taken in the cycle the one before it ends) with every word
present at once, only the operand interlock keeps ``forward`` from reading ``joint``'s last
results early: there the node must still be exact, and a copy without the interlock's waits
must not be.
"""

import gc
import random
import warnings

import numpy as np
import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.gateware.node import REQUESTS, LinkDynNode
from linkdyn.sim.node_testbench import output_names
from linkdyn.model import load_robot
from linkdyn.model.golden import encode_base_motion, encode_robot, microprogram, rnea_fixed

REGISTERS = microprogram().registers


def _states():
    robot = load_robot("ur5")
    rng = np.random.default_rng(44)
    low, high = robot.q_limits()
    q = rng.uniform(low, high, (2, robot.n))
    qd = rng.uniform(-3, 3, (2, robot.n))
    qdd = rng.uniform(-10, 10, (2, robot.n))
    f_ext = rng.uniform(-20, 20, (2, robot.n, 6))
    result = rnea_fixed(robot, q, qd, qdd, f_ext=f_ext, keep_registers=True)
    return robot, result


ORDER = [("joint", "a"), ("forward", "a"), ("local", "a"), ("joint", "b"), ("forward", "b"),
         ("backward", "a"), ("local", "b"), ("backward", "b")]


class _NodeWithoutInterlock(LinkDynNode):
    """A broken copy: the interlock's waits zeroed in the schedule ROM (drains still dropped)."""

    @staticmethod
    def _build_rom(*args, **kwargs):
        rom, starts, latch_sides = LinkDynNode._build_rom(*args, **kwargs)
        return [{**row, "wait": 0} for row in rom], starts, latch_sides


def _run(node, robot, result, link, arrival, back_to_back=False):
    """Run ``ORDER`` on ``node`` (``robot``'s link ``link``, jobs ``a``, ``b`` in banks 2, 1), the
    testbench playing both neighbours' mailboxes: an inbox word is present from
    ``arrival(name)`` cycles after its request is taken. ``back_to_back``: every request is
    started while the one before it runs, so the node takes it in the cycle that one ends.

    Returns ``(words, inbox_stalls, stall_cycles)``: the node's output words per
    ``(job, name)``, per inbox read whether it stalled, the cycles ``stall`` was high.
    """
    regs = result.registers
    constants = encode_robot(robot)
    jobs = {"a": (0, 2), "b": (1, 1)}   # job: (state, bank)
    inbox_stalls = []
    stall_cycles = 0
    words = {}

    def inbox_words(state):
        forward = {target: int(regs[link - 1][source][state])
                   for source, target in REGISTERS.forward_message}
        backward = {target: int(regs[link + 1][source][state])
                    for source, target in REGISTERS.backward_message}
        return {**forward, **backward}

    async def write(ctx, name, word, bank=0):
        ctx.set(node.ext.addr, REGISTERS[name].address)
        ctx.set(node.ext.bank, bank)
        ctx.set(node.ext.write_data, word)
        ctx.set(node.ext.write_enable, 1)
        await ctx.tick()
        ctx.set(node.ext.write_enable, 0)

    def set_start(ctx, index, value):
        kind, job = ORDER[index]
        request = getattr(node, kind)
        ctx.set(request.start, value)
        ctx.set(request.bank, jobs[job][1])

    async def start(ctx, index):
        set_start(ctx, index, 1)
        await ctx.tick()
        set_start(ctx, index, 0)

    async def bench(ctx):
        nonlocal stall_cycles
        # The constants are shared by the banks, the inputs are per bank.
        for name, word in constants[link].items():
            await write(ctx, name, word)
        for state, bank in jobs.values():
            for reg in REGISTERS.of_kind("input"):
                await write(ctx, reg.name, int(regs[link][reg.name][state]), bank)
        await start(ctx, 0)
        for index, (kind, job) in enumerate(ORDER):
            state, bank = jobs[job]
            mailbox = inbox_words(state)
            arrivals = {name: arrival(name) for name in mailbox}
            cycle = 0
            data = None
            while True:
                # Back to back: the next request is started (pending) in this one's first cycle.
                pend = back_to_back and cycle == 0 and index + 1 < len(ORDER)
                if pend:
                    set_start(ctx, index + 1, 1)
                # The inbox: present after the word's arrival cycle; data one cycle after the
                # address.
                ctx.set(node.inbox.data, data if data is not None else 0)
                name = None
                if ctx.get(node.inbox.read):
                    address = ctx.get(node.inbox.addr)
                    name = next(r.name for r in REGISTERS if r.address == address)
                    assert ctx.get(node.inbox.bank) == bank
                    ctx.set(node.inbox.present, cycle >= arrivals[name])
                    inbox_stalls.append(cycle < arrivals[name])
                else:
                    ctx.set(node.inbox.present, 0)
                stall_cycles += ctx.get(node.stall)
                done = ctx.get(node.request_done)
                done_kind = REQUESTS[ctx.get(node.request_kind)]
                await ctx.tick()
                if pend:
                    set_start(ctx, index + 1, 0)
                data = mailbox[name] if name is not None else None
                cycle += 1
                if done:
                    assert done_kind == kind
                    break
                assert cycle < 1000, f"{kind} of {job} did not end"
            if index + 1 < len(ORDER) and not back_to_back:
                await start(ctx, index + 1)
        await ctx.tick().repeat(8)
        for job, (state, bank) in jobs.items():
            for name in output_names(REGISTERS):
                ctx.set(node.ext.addr, REGISTERS[name].address)
                ctx.set(node.ext.bank, bank)
                await ctx.tick().repeat(node.ext_read_latency)
                words[(job, name)] = ctx.get(node.ext.read_data)

    sim = Simulator(node)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return words, inbox_stalls, stall_cycles


def _expected(result, link):
    return {(job, name): int(result.registers[link][name][state])
            for job, state in (("a", 0), ("b", 1)) for name in output_names(REGISTERS)}


def _chain_node(cls=LinkDynNode):
    return cls(split_joint=True, split_local=True, interlock=True,
               inbox=("forward_in", "backward_in"), banks=4)


@pytest.mark.parametrize("seed", [1, 2])
def test_chain_node_equals_golden_model_with_stalls_and_banks(seed):
    robot, result = _states()
    rng = random.Random(seed)
    words, inbox_stalls, _ = _run(_chain_node(), robot, result, 3,
                                  lambda name: rng.randrange(0, 40))
    assert words == _expected(result, 3)
    assert any(inbox_stalls), "the node stalled on missing mailbox words"


def test_interlock_holds_back_to_back_requests_until_results_are_written():
    # Every request taken in the cycle the one before it ends, every mailbox word present at
    # once: only the interlock keeps forward's first terms (which read joint's last results,
    # times the proximal link's angular velocity) from reading them while they are still in
    # the MAC pipeline.
    robot, result = _states()
    words, inbox_stalls, stall_cycles = _run(_chain_node(), robot, result, 3, lambda name: 0,
                                             back_to_back=True)
    assert words == _expected(result, 3)
    assert not any(inbox_stalls)
    # Per sample: forward's first slot waits until 5 cycles after joint's last term (taken in
    # the next cycle, it is at issue 2 cycles after it: 3 stalls), its second slot until 7 (one
    # more); its sixth (8) is then at issue late enough.
    assert stall_cycles == 2 * (3 + 1)
    # The broken copy without the waits reads those results early: wrong words.
    broken, _, broken_stalls = _run(_chain_node(_NodeWithoutInterlock), robot, result, 3,
                                    lambda name: 0, back_to_back=True)
    assert broken_stalls == 0
    wrong = {key[1] for key, word in broken.items() if word != words[key]}
    assert {"omega_z", "p_ddot_y", "tau"} <= wrong, sorted(wrong)


def test_chain_node_requests_and_rom_without_drains():
    segments = microprogram().segments
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        node = LinkDynNode(split_joint=True, split_local=True, interlock=True)
        default = LinkDynNode()
        assert node.requests == {"joint": ("joint", "joint"), "local": ("local", "local"),
                                 "forward": ("forward", "forward"),
                                 "backward": ("distal", "distal")}
        # Drains dropped after joint, forward and local; distal keeps its own.
        assert [node.request_cycles(name) for name in ("joint", "forward", "local")] == [
            len(segments[name].slots) for name in ("joint", "forward", "local")]
        assert node.request_cycles("backward") == segments["distal"].cycles
        assert default.requests == {"forward": ("joint", "local"),
                                    "backward": ("distal", "distal")}
        assert default.forward_request_cycles == sum(
            segments[name].cycles for name in ("joint", "forward", "local"))
        del node, default
        gc.collect()


def test_bank_addresses_keep_bank_zero_the_host_map():
    assert REGISTERS.bank_address("tau", 0) == REGISTERS["tau"].address
    assert REGISTERS.bank_address("tau", 3) == REGISTERS["tau"].address + 3 * 128
    assert REGISTERS.bank_address("m", 3) == REGISTERS["m"].address, "constants are shared"
    assert REGISTERS.bank_address("omega_in_x", 2) == REGISTERS["omega_in_x"].address
    assert REGISTERS.banked_depth(4) == 512
    assert REGISTERS.size == 104, "the host-visible map is unchanged"
    with pytest.raises(ValueError, match="bank"):
        REGISTERS.bank_address("q", -1)
    # The base motion the golden model gives node 1 is unaffected by banks.
    assert set(encode_base_motion(load_robot("ur5"))) == {
        reg.name for reg in REGISTERS.of_kind("forward_in")}
