"""The chain's local update (``LinkDynChain(..., local_loop=True)``, CONTROL.local) equals its
definition (:meth:`linkdyn.sim.chain_model.ChainModel.local_update`) and the golden model of
the local loop (:class:`linkdyn.model.local_loop.LocalLoopChain`) word for word.

Amaranth-simulator runs, driven through the register bus as the protocol engine drives it, in
lockstep with the model: a chain update, then local updates on fresh joint states (only
``q, qd, qdd`` written), every node's ``tau`` and node 0's base wrench read after each and
compared with the model and with ``LocalLoopChain.local_step``; UR5 and random robots, fixed
seeds. A chain that writes its messages during a local update (the suppression removed) fails.
"""

import gc
import warnings

import os

import numpy as np
import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.gateware.chain import LinkDynChain, main
from linkdyn.model import load_robot
from linkdyn.model import protocol as P
from linkdyn.model.fixedpoint import signed_word
from linkdyn.model.golden import encode_base_motion, encode_robot
from linkdyn.model.local_loop import LocalLoopChain
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.chain_model import TIMING_MARKS, ChainModel
from linkdyn.sim.chain_testbench import BusHost

_MASK = 0xFFFFFFFF
_CONTROL = P.control_register("CONTROL").address
_STATUS = P.control_register("STATUS").address
_TIMING = {P.control_register(name).address for name in TIMING_MARKS.values()}
ANSWER_LIMIT = 400


class _Lockstep:
    """The chain through its bus and :class:`ChainModel`, side by side."""

    def __init__(self, dut, model):
        self.dut, self.model, self.host = dut, model, BusHost(dut)
        self.cycles = {}

    async def write(self, ctx, node, addr, word):
        error, _ = await self.host.access(ctx, node, addr, word, limit=ANSWER_LIMIT)
        ok = self.model.write(node, addr, word)
        assert (not error) == ok, f"node {node:#x} address {addr:#x}"

    async def read(self, ctx, node, addr):
        error, word = await self.host.access(ctx, node, addr, limit=ANSWER_LIMIT)
        ok, expected = self.model.read(node, addr)
        assert (not error) == ok, f"node {node:#x} address {addr:#x}"
        if node == P.CONTROL_NODE and addr in _TIMING:
            return word
        assert word == expected & _MASK, (f"node {node:#x} address {addr:#x}: board "
                                          f"{word:#010x}, model {expected & _MASK:#010x}")
        return word

    async def update(self, ctx, bits):
        """CONTROL write on both, poll until done; return LATENCY_CYCLES."""
        await self.write(ctx, P.CONTROL_NODE, _CONTROL, bits)
        for _ in range(20_000):
            error, status = await self.host.access(ctx, P.CONTROL_NODE, _STATUS)
            assert not error
            if not status & P.STATUS_BUSY:
                break
        else:
            raise AssertionError("the update never ended")
        await self.read(ctx, P.CONTROL_NODE, _STATUS)
        await self.read(ctx, P.CONTROL_NODE, P.control_register("UPDATE_COUNT").address)
        await self.read(ctx, P.CONTROL_NODE, P.control_register("OVERFLOW").address)
        return await self.read(ctx, P.CONTROL_NODE, P.control_register("LATENCY_CYCLES").address)


def _robot(name):
    if name == "ur5":
        return load_robot("ur5")
    return random_robot(*(int(x) for x in name.split(":")[1:]))


def _run_scenario(robot, seed, chain_updates, local_updates, *, suppress=True):
    """Chain updates each followed by local updates; return the cycles seen and the count of
    words compared with the golden model."""
    n = robot.n
    dut = LinkDynChain(n, local_loop=True)
    dut._suppress_local_writes = suppress
    lock = _Lockstep(dut, ChainModel(P.ProtocolSpec(n, local_loop=True)))
    golden = LocalLoopChain(robot)
    rng = np.random.default_rng(seed)
    rmap = lock.model.spec.registers
    spec = lock.model.spec
    out = {"chain": [], "local": [], "golden_words": 0}

    async def write_state(ctx, q, qd, qdd):
        for i in range(n):
            for k, (name, value) in enumerate(zip(("q", "qd", "qdd"), (q[i], qd[i], qdd[i]))):
                await lock.write(ctx, i, spec.input_address + k,
                                 int(rmap.encode(name, value)) & _MASK)

    async def results(ctx):
        tau = [signed_word(await lock.read(ctx, i, spec.tau_address)) for i in range(n)]
        for name in ("f_out_x", "f_out_y", "f_out_z", "mu_out_x", "mu_out_y", "mu_out_z"):
            await lock.read(ctx, 0, rmap[name].address)
        for i in range(1, n):   # the mailbox registers read as the sender's words
            await lock.read(ctx, i, rmap["omega_in_z"].address)
            await lock.read(ctx, i - 1, rmap["f_in_x"].address)
        return np.array(tau)

    async def bench(ctx):
        for i, words in enumerate(encode_robot(robot)):
            for name, word in words.items():
                await lock.write(ctx, i, rmap[name].address, word)
        for name, word in encode_base_motion(robot).items():
            await lock.write(ctx, 0, rmap[name].address, word)
        for _ in range(chain_updates):
            state = rng.uniform(-1.5, 1.5, (3, n))
            await write_state(ctx, *state)
            out["chain"].append(await lock.update(ctx, P.CONTROL_START))
            full = await results(ctx)
            np.testing.assert_array_equal(full, golden.step(*state).tau_words)
            for _ in range(local_updates):
                state = state + rng.normal(0, [[0.05], [0.3], [3.0]], (3, n))
                await write_state(ctx, *state)
                out["local"].append(await lock.update(ctx, P.CONTROL_LOCAL))
                tau = await results(ctx)
                np.testing.assert_array_equal(tau, golden.local_step(*state))
                out["golden_words"] += n

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    return out


@pytest.mark.parametrize("robot_name,seed", [("ur5", 31)] + (
    [("random:3:7", 32), ("random:1:8", 33)] if os.environ.get("LINKDYN_LONG") else []))
def test_local_update_equals_the_model_and_the_golden_local_loop(robot_name, seed):
    robot = _robot(robot_name)
    out = _run_scenario(robot, seed, chain_updates=2, local_updates=2)
    assert out["golden_words"] == 2 * 2 * robot.n
    # No node waits for a neighbour: a local update is shorter than a chain update (n > 1).
    if robot.n > 1:
        assert max(out["local"]) < min(out["chain"]), out


def test_a_local_update_that_writes_its_messages_is_caught():
    """Without the suppression of the mailbox writes the neighbours' next local update reads
    this one's messages (or the next chain update finds a full mailbox): the lockstep fails."""
    with pytest.raises((AssertionError, TimeoutError)):
        _run_scenario(load_robot("ur5"), 31, chain_updates=2, local_updates=2, suppress=False)


def test_local_update_before_any_chain_update_reads_the_power_up_mailboxes():
    """0 messages (the mailboxes' power-up words), as the model defines it."""
    robot = _robot("random:2:9")
    dut = LinkDynChain(2, local_loop=True)
    lock = _Lockstep(dut, ChainModel(P.ProtocolSpec(2, local_loop=True)))
    rmap = lock.model.spec.registers

    async def bench(ctx):
        for i, words in enumerate(encode_robot(robot)):
            for name, word in words.items():
                await lock.write(ctx, i, rmap[name].address, word)
        await lock.write(ctx, 1, lock.model.spec.input_address, 0x8000)
        await lock.update(ctx, P.CONTROL_LOCAL)
        for i in range(2):
            await lock.read(ctx, i, lock.model.spec.tau_address)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_without_the_option_control_local_does_nothing_and_the_option_is_checked():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="sequential chain"):
            LinkDynChain(3, policy="pipelined", local_loop=True)
        with pytest.raises(ValueError, match="sequential chain"):
            LinkDynChain(3, parents=(-1, 0, 0), local_loop=True)
        with pytest.raises(TypeError, match="local_loop must be a bool"):
            LinkDynChain(3, local_loop=1)
        gc.collect()
    dut = LinkDynChain(2)
    model = ChainModel(P.ProtocolSpec(2))
    host = BusHost(dut)

    async def bench(ctx):
        error, _ = await host.access(ctx, P.CONTROL_NODE, _CONTROL, P.CONTROL_LOCAL)
        assert not error and model.write(P.CONTROL_NODE, _CONTROL, P.CONTROL_LOCAL)
        error, status = await host.access(ctx, P.CONTROL_NODE, _STATUS)
        assert (error, status) == (False, 0) and model.read(P.CONTROL_NODE, _STATUS) == (True, 0)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_export_command_builds_the_local_loop_and_refuses_it_for_a_pipelined_chain(tmp_path,
                                                                                    capsys):
    assert main(["--nodes", "2", "--local-loop", "--out", str(tmp_path / "c.v")]) == 0
    assert "2 nodes, LinkDyn formats, sequential, local loop" in capsys.readouterr().out
    assert "local_update" in (tmp_path / "c.v").read_text()
    assert main(["--nodes", "2", "--out", str(tmp_path / "d.v")]) == 0
    assert "local_update" not in (tmp_path / "d.v").read_text()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(SystemExit):
            main(["--nodes", "2", "--policy", "pipelined", "--local-loop", "--out",
                  str(tmp_path / "e.v")])
        gc.collect()
    assert "sequential chain of nodes only" in capsys.readouterr().err
