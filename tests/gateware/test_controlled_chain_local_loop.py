"""The controlled chain's local loop (``ControlledChain(..., local_loop=True)``, LOCAL_MULTIPLE)
equals its executable definition (:class:`~linkdyn.sim.controlled_chain_model.
ControlledChainModel` with ``ProtocolSpec(..., local_loop=True)``) word for word.

Amaranth-simulator runs in lockstep with the model through the register bus (every accepted
access applied to both, every word read compared): UR5 and random robots, fixed seeds, random
gains and limits, fresh sensor samples and references every control step, LOCAL_MULTIPLE 1, 3
and 4 (and rewritten mid-run: the schedule restarts at a chain update); after every step the
records and every node's ``tau``. The local steps' commands are not a chain update's (a model
without the local loop, given the same accesses, gives other ones), and a chain that writes its
messages during a local update fails the lockstep.
"""

import os
from types import SimpleNamespace

import numpy as np
import pytest
from amaranth.sim import Simulator

from linkdyn.gateware.controlled_chain import ControlledChain
from linkdyn.model import load_robot
from linkdyn.model import protocol as P
from linkdyn.model.controller import WORD, ControllerConfig
from linkdyn.model.golden import encode_base_motion, encode_robot
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.chain_model import TIMING_MARKS
from linkdyn.sim.chain_testbench import BusHost
from linkdyn.sim.controlled_chain_model import CONTROL_TIMING_MARKS, ControlledChainModel

_MASK = 0xFFFFFFFF
_CONTROL = P.control_register("CONTROL").address
_STATUS = P.control_register("STATUS").address
_MULTIPLE = P.control_register("LOCAL_MULTIPLE").address
_TIMING = {P.control_register(name).address
           for name in (*TIMING_MARKS.values(), *CONTROL_TIMING_MARKS.values())}
_WORD = {w.name: w.address for w in P.CONTROLLER_WORDS}
ANSWER_LIMIT = 5000
LONG = os.environ.get("LINKDYN_LONG", "") not in ("", "0")


class _Lockstep:
    """The gateware through its bus and the model (and optionally a second model that sees
    the same accesses), side by side."""

    def __init__(self, dut, model, shadow=None):
        self.dut, self.model, self.shadow, self.host = dut, model, shadow, BusHost(dut)
        self.records = []
        self.shadow_records = []

    async def write(self, ctx, node, addr, word, *, expect=True):
        error, _ = await self.host.access(ctx, node, addr, word, limit=ANSWER_LIMIT)
        ok = self.model.write(node, addr, word)
        if self.shadow is not None:
            self.shadow.write(node, addr, word)
        assert ok == expect, (node, hex(addr), word)
        assert (not error) == ok, f"node {node:#x} address {addr:#x}: board error {error}"

    async def read(self, ctx, node, addr):
        error, word = await self.host.access(ctx, node, addr, limit=ANSWER_LIMIT)
        ok, expected = self.model.read(node, addr)
        assert (not error) == ok, f"node {node:#x} address {addr:#x}"
        if node == P.CONTROL_NODE and addr in _TIMING:
            return word
        assert word == expected & _MASK, (f"node {node:#x} address {addr:#x}: board "
                                          f"{word:#010x}, model {expected & _MASK:#010x}")
        return word

    def sensor(self, ctx, node, q, qd):
        ctx.set(self.dut.sensor[node].q, q)
        ctx.set(self.dut.sensor[node].qd, qd)
        for model in (self.model, self.shadow):
            if model is not None:
                model.set_sensor(node, q, qd)

    async def step(self, ctx):
        await self.write(ctx, P.CONTROL_NODE, _CONTROL, P.CONTROL_STEP)
        for _ in range(20_000):
            error, status = await self.host.access(ctx, P.CONTROL_NODE, _STATUS)
            assert not error
            if status & P.STATUS_DONE and not status & P.STATUS_BUSY:
                break
        else:
            raise AssertionError("the control step never ended")
        n = self.model.spec.n_nodes
        record = [[await self.read(ctx, i, w.address) for w in P.RECORD_WORDS]
                  for i in range(n)]
        record.append([await self.read(ctx, i, self.model.spec.tau_address) for i in range(n)])
        self.records.append(record)
        if self.shadow is not None:
            self.shadow_records.append(self.shadow.record.copy())
        for name in ("FAULTS", "CONTROL_STEPS", "OVERFLOW", "UPDATE_COUNT", "LOCAL_MULTIPLE"):
            await self.read(ctx, P.CONTROL_NODE, P.control_register(name).address)
        return await self.read(ctx, P.CONTROL_NODE, P.control_register(
            "LATENCY_CYCLES").address)


def _word(value):
    return int(WORD.encode(float(np.clip(value, -30000, 30000)))) & _MASK


def _limits(robot, rng):
    out = []
    for link in robot.links:
        limits = link.limits
        if limits.tau_max is None:
            limits = SimpleNamespace(q_min=-float(rng.uniform(0.5, 3)),
                                     q_max=float(rng.uniform(0.5, 3)),
                                     qd_max=float(rng.uniform(0.5, 4)),
                                     tau_max=float(rng.uniform(5, 100)))
        out.append(limits)
    return out


def _config(limits, rng):
    return ControllerConfig.for_joint(
        SimpleNamespace(q_min=limits.q_min, q_max=limits.q_max, qd_max=limits.qd_max,
                        tau_max=limits.tau_max),
        kp=float(rng.uniform(10, 2000)), kd=float(rng.uniform(1, 100)),
        lim_p=float(rng.uniform(0, 200)), lim_d=float(rng.uniform(0, 200)),
        guard_kp=float(rng.uniform(0, 200)), guard_ki=float(rng.uniform(0, 2)),
        current_per_torque=float(rng.uniform(0.001, 2)), tau_max=limits.tau_max,
        measured_state=bool(rng.integers(2)), drive_enable=True)


def _run(robot, seed, multiples, steps, *, suppress=True, shadow=False):
    n = robot.n
    dut = ControlledChain(n, local_loop=True)
    dut.chain._suppress_local_writes = suppress
    spec = P.ProtocolSpec(n, controllers=True, local_loop=True)
    lock = _Lockstep(dut, ControlledChainModel(spec),
                     ControlledChainModel(P.ProtocolSpec(n, controllers=True)) if shadow
                     else None)
    rng = np.random.default_rng(seed)
    latency = {"chain": [], "local": []}
    out_age = []

    async def bench(ctx):
        rmap = spec.registers
        for i, words in enumerate(encode_robot(robot)):
            for name, word in words.items():
                await lock.write(ctx, i, rmap[name].address, word)
        for name, word in encode_base_motion(robot).items():
            await lock.write(ctx, 0, rmap[name].address, word)
        limits = _limits(robot, rng)
        for i, lim in enumerate(limits):
            for name, word in _config(lim, rng).encode().items():
                await lock.write(ctx, i, _WORD[name], word)
        assert await lock.read(ctx, P.CONTROL_NODE, _MULTIPLE) == 1, "reset value"
        await lock.write(ctx, P.CONTROL_NODE, _MULTIPLE, 0, expect=False)
        for multiple in multiples:
            await lock.write(ctx, P.CONTROL_NODE, _MULTIPLE, multiple)
            for step in range(steps):
                for i, lim in enumerate(limits):
                    q = rng.uniform(lim.q_min, lim.q_max)
                    lock.sensor(ctx, i, _word(q), _word(rng.uniform(-1, 1) * lim.qd_max))
                    words = [_word(q + rng.normal(0, 0.3)),
                             _word(rng.uniform(-1, 1) * lim.qd_max), _word(rng.uniform(-20, 20))]
                    for k in range(3):
                        await lock.write(ctx, i, P.REFERENCE_WORDS[k].address, words[k])
                cycles = await lock.step(ctx)
                latency["chain" if step % multiple == 0 else "local"].append(cycles)
        # Every word of every controller window (its state: msg_age counts the steps without a
        # neighbour-message strobe, the local ones).
        for i in range(n):
            for word in P.CONTROLLER_WORDS:
                await lock.read(ctx, i, word.address)
        out_age.extend(lock.model.joints[i].read("msg_age") for i in range(n))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    lock.message_age = out_age
    return lock, latency


@pytest.mark.parametrize("robot_name,seed,multiples,steps", [
    ("ur5", 41, (3,), 6),
    ("random:1:5", 43, (2,), 3),
] + ([("random:3:7", 42, (4, 1), 4), ("ur5", 44, (5, 2, 1), 10), ("random:6:9", 45, (3, 7), 8)]
     if LONG else []))
def test_controlled_chain_local_loop_equals_the_model_word_for_word(robot_name, seed,
                                                                    multiples, steps):
    robot = load_robot("ur5") if robot_name == "ur5" else random_robot(
        *(int(x) for x in robot_name.split(":")[1:]))
    lock, latency = _run(robot, seed, multiples, steps, shadow=True)
    assert lock.model.control_steps == len(multiples) * steps
    assert any(any(r[1] for r in record[:-1]) for record in lock.records), "currents driven"
    if robot.n > 1:
        # A local step runs the nodes without waiting for their neighbours.
        assert max(latency["local"]) < min(latency["chain"]), latency
    # A board without the local loop, given the same accesses, gives the same commands in the
    # chain-update steps and other ones in the local steps (a local step that ran a chain
    # update, or reused the last torques, would not pass the lockstep).
    phases = [step % multiple for multiple in multiples for step in range(steps)]
    tau_cmd = [np.array([r[0] for r in record[:-1]]) for record in lock.records]
    other = [records[:, 0] & _MASK for records in lock.shadow_records]
    first = [k for k, phase in enumerate(phases) if phase == 0]
    np.testing.assert_array_equal(tau_cmd[first[0]], other[first[0]])
    if any(phases) and robot.n > 1:
        assert any(np.any(tau_cmd[k] != other[k]) for k, phase in enumerate(phases) if phase)
    # The last step's phase is the steps since its chain update: no strobe in the local steps.
    assert lock.message_age == [phases[-1]] * robot.n


def test_controlled_chain_whose_local_update_writes_messages_is_caught():
    with pytest.raises(AssertionError):
        _run(load_robot("ur5"), 41, (3,), 2, suppress=False)


def test_local_multiple_is_refused_while_a_step_runs_and_control_local_is_not_the_hosts():
    """A write of LOCAL_MULTIPLE while a control step runs is refused (the schedule never
    changes inside a step); the host's CONTROL.local is ignored on a board with controllers
    (its local updates run inside control steps), as the model ignores it."""
    dut = ControlledChain(2, local_loop=True)
    model = ControlledChainModel(P.ProtocolSpec(2, controllers=True, local_loop=True))
    host = BusHost(dut)
    count = P.control_register("UPDATE_COUNT").address

    async def bench(ctx):
        error, _ = await host.access(ctx, P.CONTROL_NODE, _CONTROL, P.CONTROL_STEP)
        assert not error
        error, _ = await host.access(ctx, P.CONTROL_NODE, _MULTIPLE, 3)
        assert error, "LOCAL_MULTIPLE written while the step ran"
        error, word = await host.access(ctx, P.CONTROL_NODE, _MULTIPLE, limit=ANSWER_LIMIT)
        assert (error, word) == (False, 1)
        assert (await host.access(ctx, P.CONTROL_NODE, count))[1] == 1
        assert model.write(P.CONTROL_NODE, _CONTROL, P.CONTROL_LOCAL)
        error, _ = await host.access(ctx, P.CONTROL_NODE, _CONTROL, P.CONTROL_LOCAL)
        assert not error
        for _ in range(50):
            error, status = await host.access(ctx, P.CONTROL_NODE, _STATUS)
            assert not status & P.STATUS_BUSY
        assert (await host.access(ctx, P.CONTROL_NODE, count))[1] == 1
        assert model.read(P.CONTROL_NODE, count) == (True, 0)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
