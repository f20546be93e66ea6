"""The controlled chain (gateware) equals its executable definition word for word.

:class:`~linkdyn.gateware.controlled_chain.ControlledChain` runs in the Amaranth simulator,
driven through its register bus as the protocol engine drives it
(:class:`~linkdyn.sim.chain_testbench.BusHost`), in lockstep with
:class:`~linkdyn.sim.controlled_chain_model.ControlledChainModel` (the controllers' golden model
around the golden chain): every access the board accepts is applied to the model too, every
word read is compared (the timing words only for plausibility), and after the scenario every
word of every node's controller window, every controller control register and every node's
``tau`` is read back. Scenarios (fixed seeds): UR5 joint limits with random gains, and random
robots of a few joints with random limits; sensor samples and references inside and beyond the
limits, small torque limits (torque saturation), reference watchdogs, faults cleared by the
window word and by CONTROL.fault_clear, random parameter writes. Besides: the accesses refused
while a control step runs, and the CONTROL_PERIOD timer.
"""

import gc
import os
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from amaranth.sim import Simulator

from linkdyn.gateware.controlled_chain import ControlledChain
from linkdyn.gateware.controller import CYCLES
from linkdyn.model import load_robot
from linkdyn.model import protocol as P
from linkdyn.model.controller import WORD, ControllerConfig
from linkdyn.model.golden import encode_base_motion, encode_robot
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.chain_testbench import BusHost
from linkdyn.sim.controlled_chain_model import CONTROL_TIMING_MARKS, ControlledChainModel
from linkdyn.sim.chain_model import TIMING_MARKS

LONG = os.environ.get("LINKDYN_LONG", "") not in ("", "0")
_MASK = 0xFFFFFFFF
_CONTROL = P.control_register("CONTROL").address
_STATUS = P.control_register("STATUS").address
_TIMING = {P.control_register(name).address
           for name in (*TIMING_MARKS.values(), *CONTROL_TIMING_MARKS.values())}
_WORD = {w.name: w.address for w in P.CONTROLLER_WORDS}
#: Longest answer while a step runs (a wait for its end), cycles.
ANSWER_LIMIT = 5000


class Lockstep:
    """The gateware through its bus and the model, side by side."""

    def __init__(self, dut, model):
        self.dut = dut
        self.model = model
        self.host = BusHost(dut)
        self.checked = 0
        self.seen = {"fault": 0, "i_ref": 0}

    async def write(self, ctx, node, addr, word, *, expect=True):
        """Write on both; the board's acceptance must equal the model's (``expect``)."""
        error, _ = await self.host.access(ctx, node, addr, word, limit=ANSWER_LIMIT)
        ok = self.model.write(node, addr, word)
        assert ok == expect, (node, hex(addr), word)
        assert (not error) == ok, f"node {node:#x} address {addr:#x}: board error {error}"
        return ok

    async def read(self, ctx, node, addr):
        """Read on both and compare (timing words: the board's)."""
        error, word = await self.host.access(ctx, node, addr, limit=ANSWER_LIMIT)
        ok, expected = self.model.read(node, addr)
        assert (not error) == ok, f"node {node:#x} address {addr:#x}"
        if node == P.CONTROL_NODE and addr in _TIMING:
            return word
        assert word == expected & _MASK, (f"node {node:#x} address {addr:#x}: board "
                                          f"{word:#010x}, model {expected & _MASK:#010x}")
        self.checked += 1
        return word

    def sensor(self, ctx, node, q, qd):
        ctx.set(self.dut.sensor[node].q, q)
        ctx.set(self.dut.sensor[node].qd, qd)
        self.model.set_sensor(node, q, qd)

    async def wait_idle(self, ctx, limit=20_000):
        """Poll STATUS until the step (or update) has ended; return the polls."""
        for polls in range(limit):
            error, status = await self.host.access(ctx, P.CONTROL_NODE, _STATUS)
            assert not error
            if status & P.STATUS_DONE and not status & P.STATUS_BUSY:
                return polls
            assert not status & P.STATUS_DONE, "busy and done at once"
        raise AssertionError("the control step never ended")

    async def control(self, ctx, bits):
        """A CONTROL write on both, then poll until idle (the model steps at once)."""
        await self.write(ctx, P.CONTROL_NODE, _CONTROL, bits)
        await self.wait_idle(ctx)
        # STATUS after the step: done, and the overflow bit as the model has it.
        await self.read(ctx, P.CONTROL_NODE, _STATUS)

    async def records(self, ctx):
        for i in range(self.model.spec.n_nodes):
            for word in P.RECORD_WORDS:
                value = await self.read(ctx, i, word.address)
                for name in self.seen:
                    if word.name == f"record_{name}" and value:
                        self.seen[name] += 1
        for name in ("FAULTS", "CONTROL_STEPS", "CONTROL_OVERRUNS", "OVERFLOW",
                     "UPDATE_COUNT"):
            await self.read(ctx, P.CONTROL_NODE, P.control_register(name).address)

    async def everything(self, ctx):
        spec = self.model.spec
        for i in range(spec.n_nodes):
            for word in P.CONTROLLER_WORDS:
                await self.read(ctx, i, word.address)
            await self.read(ctx, i, spec.tau_address)
            for k in range(3):
                await self.read(ctx, i, spec.input_address + k)
        for reg in spec.control_registers:
            if reg.owner == "chain":
                await self.read(ctx, P.CONTROL_NODE, reg.address)


def run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def _limits(robot, rng):
    """Joint limits: the robot's, or random ones for a robot without."""
    out = []
    for link in robot.links:
        limits = link.limits
        if limits.tau_max is None:
            q_max = float(rng.uniform(0.5, 3))
            limits = SimpleNamespace(q_min=-float(rng.uniform(0.5, 3)), q_max=q_max,
                                     qd_max=float(rng.uniform(0.5, 4)),
                                     tau_max=float(rng.uniform(5, 100)))
        out.append(limits)
    return out


def _config(limits, rng):
    """A random configuration from a joint's limits; the torque limit sometimes small, so
    that it saturates."""
    tau_max = limits.tau_max * (float(rng.uniform(0.01, 0.1)) if rng.random() < 0.4 else 1.0)
    return ControllerConfig.for_joint(
        SimpleNamespace(q_min=limits.q_min, q_max=limits.q_max, qd_max=limits.qd_max,
                        tau_max=limits.tau_max),
        kp=float(rng.uniform(10, 2000)), kd=float(rng.uniform(1, 100)),
        lim_p=float(rng.uniform(0, 200)), lim_d=float(rng.uniform(0, 200)),
        guard_kp=float(rng.uniform(0, 200)), guard_ki=float(rng.uniform(0, 2)),
        current_per_torque=float(rng.uniform(0.001, 2)), tau_max=tau_max,
        measured_state=bool(rng.integers(2)), drive_enable=bool(rng.random() < 0.9),
        tau_saturation_cycles=int(rng.integers(0, 3)), watchdog_cycles=int(rng.integers(0, 3)),
        watchdog_reference=bool(rng.random() < 0.4), watchdog_message=bool(rng.random() < 0.2))


def _word(value):
    return int(WORD.encode(float(np.clip(value, -30000, 30000)))) & _MASK


async def _load(ctx, lock, robot, configs):
    spec = lock.model.spec
    rmap = spec.registers
    for i, words in enumerate(encode_robot(robot)):
        for name, word in words.items():
            await lock.write(ctx, i, rmap[name].address, word)
    for name, word in encode_base_motion(robot).items():
        await lock.write(ctx, 0, rmap[name].address, word)
    for i, config in enumerate(configs):
        for name, word in config.encode().items():
            await lock.write(ctx, i, _WORD[name], word)


async def _scenario(ctx, lock, robot, rng, steps):
    """Random control steps: sensor samples, references (sometimes without the strobe), fault
    clears both ways, parameter writes, CONTROL bits combined."""
    limits = _limits(robot, rng)
    configs = [_config(lim, rng) for lim in limits]
    await _load(ctx, lock, robot, configs)
    for step in range(steps):
        for i, lim in enumerate(limits):
            span = lim.q_max - lim.q_min
            q = rng.uniform(lim.q_min, lim.q_max)
            if rng.random() < 0.25:     # beyond the range, sometimes beyond the hard limits
                q = rng.uniform(lim.q_min - 0.2 * span, lim.q_max + 0.2 * span)
            qd = rng.uniform(-1.3, 1.3) * lim.qd_max
            lock.sensor(ctx, i, _word(q), _word(qd))
            if rng.random() < 0.8:      # a new reference (the strobe is the qdd_ref write)
                words = [_word(q + rng.normal(0, 0.3)), _word(rng.uniform(-1, 1) * lim.qd_max),
                         _word(rng.uniform(-20, 20))]
                count = 3 if rng.random() < 0.85 else int(rng.integers(1, 3))
                for k in range(count):
                    await lock.write(ctx, i, P.REFERENCE_WORDS[k].address, words[k])
            if rng.random() < 0.1:      # a fault clear through the window
                await lock.write(ctx, i, _WORD["fault_clear"], int(rng.integers(1 << 32)))
            if rng.random() < 0.1:      # a parameter changes between steps
                name = str(rng.choice(["kp", "kd", "tau_max", "lim_p", "guard_small"]))
                await lock.write(ctx, i, _WORD[name], _word(rng.uniform(0, 100)))
        bits = P.CONTROL_STEP
        if rng.random() < 0.2:
            bits |= P.CONTROL_FAULT_CLEAR
        if rng.random() < 0.2:
            bits |= P.CONTROL_CLEAR
        if rng.random() < 0.1:
            bits |= P.CONTROL_START     # ignored beside control_step
        await lock.control(ctx, bits)
        await lock.records(ctx)
    return configs


def _lockstep(n, **kwargs):
    dut = ControlledChain(n, **kwargs)
    return dut, Lockstep(dut, ControlledChainModel(P.ProtocolSpec(n, controllers=True)))


@pytest.mark.parametrize("robot_name,seed,steps", [
    ("ur5", 14, 12 if LONG else 3),
    ("random:1:3", 21, 30 if LONG else 8),
    ("random:3:5", 22, 20 if LONG else 5),
] + ([("random:4:9", 23, 20), ("random:2:11", 24, 30)] if LONG else []))
def test_controlled_chain_equals_the_model_word_for_word(robot_name, seed, steps):
    robot = load_robot("ur5") if robot_name == "ur5" else random_robot(
        *(int(x) for x in robot_name.split(":")[1:]))
    dut, lock = _lockstep(robot.n)
    seen = {}

    async def bench(ctx):
        await _scenario(ctx, lock, robot, np.random.default_rng(seed), steps)
        await lock.everything(ctx)
        seen["faults"] = lock.model.faults
        seen["latency"] = await lock.read(ctx, P.CONTROL_NODE, P.control_register(
            "CONTROL_LATENCY_CYCLES").address)
        seen["update"] = await lock.read(ctx, P.CONTROL_NODE,
                                         P.control_register("LATENCY_CYCLES").address)

    run(dut, bench)
    assert lock.model.control_steps == steps
    assert lock.checked > 70 * robot.n
    # The scenario drives currents and trips faults (the comparison is not of zeros only).
    assert lock.seen["i_ref"] and lock.seen["fault"], lock.seen
    # The step's latency covers the feedback, the update and the output segments.
    assert seen["latency"] > CYCLES["feedback"] + seen["update"] + CYCLES["output"]


def test_compact_controllers_and_one_cycle_cordic_steps_equal_the_model():
    """The other timings (compact controllers, the Spartan-6 CORDIC steps) give the same
    words."""
    robot = random_robot(2, 17)
    dut, lock = _lockstep(2, pipelined=False, cordic_step_cycles=1)

    async def bench(ctx):
        await _scenario(ctx, lock, robot, np.random.default_rng(18), 4)
        await lock.everything(ctx)

    run(dut, bench)
    assert lock.model.control_steps == 4


def test_fault_sequences_latch_and_clear_as_the_model():
    """Every fault cause of a joint, latched by the controlled chain as by the model, and
    cleared by the window word and by CONTROL.fault_clear."""
    robot = random_robot(2, 7)
    dut, lock = _lockstep(2)
    base = ControllerConfig(kp=100.0, kd=10.0, lim_p=50.0, lim_d=50.0, guard_kp=10.0,
                            guard_kv=1.0, guard_small=0.5, guard_large=5.0, q_min=-1.0,
                            q_max=1.0, qd_max=2.0, q_hard_min=-1.5, q_hard_max=1.5,
                            qd_hard_max=3.0, tau_max=200.0, current_per_torque=0.5,
                            tau_saturation_cycles=1, watchdog_cycles=1,
                            watchdog_reference=True)
    fault = _WORD["record_fault"]

    async def step(ctx, q=0.0, qd=0.0, reference=True, bits=P.CONTROL_STEP):
        for i in range(2):
            lock.sensor(ctx, i, _word(q), _word(qd))
            if reference:
                for word in P.REFERENCE_WORDS:
                    await lock.write(ctx, i, word.address, _word(q))
        await lock.control(ctx, bits)
        await lock.records(ctx)
        return [(await lock.read(ctx, i, fault)) & 7 for i in range(2)]

    async def bench(ctx):
        await _load(ctx, lock, robot, [base, base])
        assert await step(ctx) == [0, 0]
        assert await step(ctx, q=1.6) == [1, 1], "position beyond the hard limit"
        assert await step(ctx) == [1, 1], "the fault stays latched"
        await lock.write(ctx, 0, _WORD["fault_clear"], 1)
        assert (await lock.read(ctx, 0, _WORD["fault"])) == 0
        assert (await lock.read(ctx, 1, _WORD["fault"])) & 7 == 1
        assert await step(ctx) == [0, 1], "joint 0 cleared through its window"
        assert await step(ctx, bits=P.CONTROL_STEP | P.CONTROL_FAULT_CLEAR) == [0, 0]
        assert await step(ctx, qd=3.5) == [2, 2], "speed beyond qd_hard_max"
        await lock.control(ctx, P.CONTROL_FAULT_CLEAR)          # without a step
        assert await lock.read(ctx, P.CONTROL_NODE,
                               P.control_register("FAULTS").address) == 0
        for _ in range(2):                                      # the watchdog counts
            codes = await step(ctx, reference=False)
        assert codes == [4, 4], "reference watchdog"
        await lock.control(ctx, P.CONTROL_FAULT_CLEAR)
        # Torque saturation: a tiny torque limit, exceeded for more than 1 step.
        for i in range(2):
            await lock.write(ctx, i, _WORD["tau_max"], _word(1e-3))
        codes = [await step(ctx) for _ in range(3)]
        assert codes[-1] == [3, 3], "torque saturation"
        assert (await lock.read(ctx, 0, _WORD["record_i_ref"])) == 0, "no current when faulted"
        await lock.everything(ctx)

    run(dut, bench)


def test_accesses_refused_while_a_control_step_runs():
    """While a step runs: STATUS busy and not done, node writes, CONTROL start / control_step
    / fault_clear and window writes refused (nothing changes), window records and control
    registers answered, register-port reads answered after the step."""
    robot = random_robot(2, 3)
    dut, lock = _lockstep(2)
    host = lock.host
    rng = np.random.default_rng(4)

    async def bench(ctx):
        await _load(ctx, lock, robot, [_config(lim, rng) for lim in _limits(robot, rng)])
        await lock.control(ctx, P.CONTROL_STEP)
        await lock.write(ctx, P.CONTROL_NODE, _CONTROL, P.CONTROL_STEP)   # model steps now
        refused = [
            (0, P.ProtocolSpec(2).input_address, 5), (1, 0, 5),
            (P.CONTROL_NODE, _CONTROL, P.CONTROL_START),
            (P.CONTROL_NODE, _CONTROL, P.CONTROL_STEP),
            (P.CONTROL_NODE, _CONTROL, P.CONTROL_FAULT_CLEAR),
            (0, _WORD["kp"], 5), (1, _WORD["q_ref"], 5), (0, _WORD["qdd_ref"], 5),
            (1, _WORD["fault_clear"], 1), (0, _WORD["mode"], 0),
        ]
        for node, addr, word in refused:
            error, status = await host.access(ctx, P.CONTROL_NODE, _STATUS)
            assert not error and status & P.STATUS_BUSY and not status & P.STATUS_DONE
            error, _ = await host.access(ctx, node, addr, word, limit=100)
            assert error, (node, hex(addr))
        # Answered at once while the step runs (the model's words: the step is atomic there,
        # the board shows the previous record until the step ends, which was the same).
        for name in ("CONTROL_PERIOD", "CONTROL_STEPS", "FAULTS"):
            error, _ = await host.access(ctx, P.CONTROL_NODE,
                                         P.control_register(name).address, limit=10)
            assert not error
        error, status = await host.access(ctx, P.CONTROL_NODE, _STATUS)
        assert status & P.STATUS_BUSY, "the refused accesses ran during the step"
        # A register-port read waits for the step's end and gives the model's word.
        await lock.read(ctx, 1, _WORD["integrator"])
        await lock.wait_idle(ctx)
        await lock.everything(ctx)

    run(dut, bench)


def test_control_period_runs_steps_and_counts_overruns():
    """CONTROL_PERIOD p > 0: a step every p cycles; a period shorter than the step skips steps
    (CONTROL_OVERRUNS); the words equal the model's after as many steps."""
    robot = random_robot(1, 5)
    dut, lock = _lockstep(1)
    host = lock.host
    rng = np.random.default_rng(6)
    period_addr = P.control_register("CONTROL_PERIOD").address
    steps_addr = P.control_register("CONTROL_STEPS").address
    overruns_addr = P.control_register("CONTROL_OVERRUNS").address
    latency_addr = P.control_register("CONTROL_LATENCY_CYCLES").address

    async def bench(ctx):
        await _load(ctx, lock, robot, [_config(lim, rng) for lim in _limits(robot, rng)])
        lock.sensor(ctx, 0, _word(0.1), _word(-0.2))
        await lock.control(ctx, P.CONTROL_STEP)
        step_cycles = await lock.read(ctx, P.CONTROL_NODE, latency_addr)
        # A period well above the step: no overrun.
        period = 3 * step_cycles
        await lock.write(ctx, P.CONTROL_NODE, period_addr, period)
        before = host.cycle
        await host.tick(ctx, 10 * period + 5)
        error, _ = await host.access(ctx, P.CONTROL_NODE, period_addr, 0)
        assert not error
        lock.model.control_period = 0
        await lock.wait_idle(ctx)
        _, steps = await host.access(ctx, P.CONTROL_NODE, steps_addr)
        elapsed = host.cycle - before
        ran = steps - 1
        assert abs(ran - elapsed / period) <= 1, (ran, elapsed, period)
        _, overruns = await host.access(ctx, P.CONTROL_NODE, overruns_addr)
        assert overruns == 0
        for _ in range(ran):            # the model runs as many steps
            lock.model.control_step()
        await lock.everything(ctx)
        # A period below the step's cycles: skipped steps are counted.
        period = step_cycles // 3
        await host.access(ctx, P.CONTROL_NODE, period_addr, period)
        await host.tick(ctx, 6 * step_cycles)
        await host.access(ctx, P.CONTROL_NODE, period_addr, 0)
        await lock.wait_idle(ctx)
        _, after = await host.access(ctx, P.CONTROL_NODE, steps_addr)
        _, overruns = await host.access(ctx, P.CONTROL_NODE, overruns_addr)
        ran = after - steps
        assert 4 <= ran <= 7, ran
        assert overruns >= ran, (ran, overruns)
        for _ in range(ran):
            lock.model.control_step()
        for i in range(1):
            for word in P.CONTROLLER_WORDS:
                await lock.read(ctx, i, word.address)

    run(dut, bench)


@pytest.mark.skipif(not LONG, reason="long variant: LINKDYN_LONG=1")
def test_panda_controlled_chain_many_steps_long():
    from linkdyn.model.reference import load_reference_robot
    robot = load_reference_robot("panda")
    dut, lock = _lockstep(robot.n)

    async def bench(ctx):
        await _scenario(ctx, lock, robot, np.random.default_rng(31), 25)
        await lock.everything(ctx)

    run(dut, bench)
    assert lock.model.control_steps == 25


@pytest.mark.parametrize("args,kwargs,error,match", [
    ((0,), {}, ValueError, "Node count must be 1 .. 32, not 0"),
    (("2",), {}, TypeError, "Node count must be an integer, not '2'"),
    ((2, "Q15.16"), {}, TypeError, "fmt must be NodeFormats or a QFormat"),
    ((2,), {"pipelined": 1}, TypeError, "pipelined must be a bool, not 1"),
    ((2,), {"cordic_step_cycles": 3}, ValueError, "cordic_step_cycles must be 1 or 2, not 3"),
])
def test_bad_arguments_are_refused_with_what_was_expected(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        ControlledChain(*args, **kwargs)
    with warnings.catch_warnings():     # the refused object is never elaborated
        warnings.simplefilter("ignore")
        gc.collect()
