"""Joint controllers on the distributed boards: the distributed controlled chain equals its
executable definition word for word, and the joints behind a cut reach their safe state.

:class:`~linkdyn.gateware.controlled_actuator.ControlledDistributedChain` (a
:class:`~linkdyn.gateware.controlled_actuator.BoardController` on every board, the control
step over the links) runs in the Amaranth simulator in lockstep with
:class:`~linkdyn.sim.controlled_chain_model.ControlledChainModel` (the golden controllers around
the golden chain), driven and compared by the same scenarios as the single-FPGA controlled
chain (``tests/gateware/test_controlled_chain.py``: random references, sensors, gains and
limits, fixed seeds; every fault cause latched and cleared). Then the safe state: 3 boards,
the CONTROL_PERIOD timer on, hop 1 cut mid-stream: board 2 behind the cut latches its message
watchdog fault and drives zero current with enable low within two periods (measured here in
cycles against the period), boards 0 and 1 before it keep their drive; after the restore the
fault is read with its cause, cleared, and the steps resume without a reset. The same cut with
the message watchdog off leaves board 2 driving its last current: the test of the safe state
fails without the watchdog.

The Amaranth simulator runs 3 boards at a few hundred cycles per second: the cut test takes
about 3 to 6 minutes (27,000 cycles); the fault sequence, the longer lockstep runs and the cut
without the watchdog run with ``LINKDYN_LONG=1``.
"""

import gc
import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.gateware.actuator import ActuatorCore
from linkdyn.gateware.controlled_actuator import COMMAND_WORDS, ControlledDistributedChain
from linkdyn.model import protocol as P
from linkdyn.model.controller import FAULTS, ControllerConfig, decode_fault
from linkdyn.sim.chain_cases import random_robot
from linkdyn.sim.controlled_chain_model import ControlledChainModel

from support import LONG

# The scenarios and the lockstep of the single-FPGA controlled chain's test, as they are.
_SPEC = importlib.util.spec_from_file_location(
    "_controlled_chain_scenarios", Path(__file__).with_name("test_controlled_chain.py"))
_CC = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_CC)
Lockstep, _scenario, _load, _word, _WORD = (_CC.Lockstep, _CC._scenario, _CC._load, _CC._word,
                                            _CC._WORD)
_CONTROL = P.control_register("CONTROL").address


def _lockstep(n, **kwargs):
    kwargs.setdefault("bits", 5)
    kwargs.setdefault("timeout", 2048)
    dut = ControlledDistributedChain(n, **kwargs)
    # The model without the distributed chain's LINK_DOWN (which it does not have: read
    # separately, 0 without a cut).
    return dut, Lockstep(dut, ControlledChainModel(P.ProtocolSpec(n, controllers=True)))


def _run(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


# The Amaranth simulator runs these at about 300 (2 boards) .. 150 (3 boards) cycles per
# second: 3 boards behind LINKDYN_LONG (about 4 minutes for 2 steps).
@pytest.mark.parametrize("n,seed,steps", [(1, 31, 4), (2, 32, 1)]
                         + ([(2, 32, 3), (3, 33, 2), (3, 34, 6)] if LONG else []))
def test_distributed_controllers_equal_the_model_word_for_word(n, seed, steps):
    robot = random_robot(n, seed)
    dut, lock = _lockstep(n)

    async def bench(ctx):
        await _scenario(ctx, lock, robot, np.random.default_rng(seed), steps)
        await lock.everything(ctx)

    _run(dut, bench)
    assert lock.model.control_steps == steps
    assert lock.checked > 60 * n


@pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1: 90 s of 2-board simulation")
def test_fault_sequences_latch_and_clear_on_the_boards_as_the_model():
    """Every fault cause of the controllers on 2 boards, latched and cleared (window word,
    CONTROL.fault_clear) as by the model, word for word (the single-FPGA chain's sequence)."""
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
        return [(await lock.read(ctx, i, fault)) & 7 for i in range(2)]

    async def bench(ctx):
        await _load(ctx, lock, robot, [base, base])
        assert await step(ctx) == [0, 0]
        assert await step(ctx, q=1.6) == [1, 1], "position beyond the hard limit"
        await lock.write(ctx, 0, _WORD["fault_clear"], 1)
        assert (await lock.read(ctx, 0, _WORD["fault"])) == 0
        assert (await lock.read(ctx, 1, _WORD["fault"])) & 7 == 1
        assert await step(ctx) == [0, 1], "joint 0 cleared through its window"
        assert await step(ctx, bits=P.CONTROL_STEP | P.CONTROL_FAULT_CLEAR) == [0, 0]
        assert await step(ctx, qd=3.5) == [2, 2], "speed beyond qd_hard_max"
        await lock.control(ctx, P.CONTROL_FAULT_CLEAR)          # without a step
        assert await lock.read(ctx, P.CONTROL_NODE, P.control_register("FAULTS").address) == 0
        for _ in range(2):                                      # the watchdog counts
            codes = await step(ctx, reference=False)
        assert codes == [4, 4], "reference watchdog"
        await lock.read(ctx, 1, _WORD["fault"])
        await lock.records(ctx)

    _run(dut, bench)


# -- the safe state behind a cut ------------------------------------------------------------------

#: The controllers of the cut test: the position beyond the soft range (the guard pushes back
#: with its large limit: a current flows without a robot loaded), the message watchdog on with
#: no step's grace (watchdog_cycles 0), no reference watchdog (the timer's steps bring none).
def _cut_config(watchdog_message):
    return ControllerConfig(kp=100.0, kd=10.0, lim_p=50.0, lim_d=50.0, guard_kp=10.0,
                            guard_kv=1.0, guard_small=0.5, guard_large=5.0, q_min=-1.0,
                            q_max=1.0, qd_max=2.0, q_hard_min=-1.5, q_hard_max=1.5,
                            qd_hard_max=3.0, tau_max=200.0, current_per_torque=0.5,
                            watchdog_cycles=0, watchdog_message=watchdog_message)


_MESSAGE_WATCHDOG = next(code for code, (name, _) in FAULTS.items()
                         if name == "message_watchdog")


def _cut_scenario(watchdog_message, *, restore=True):
    """3 boards on the CONTROL_PERIOD timer, hop 1 (board 1 to 2) cut in the middle of a step;
    return what was measured (cycles, words)."""
    n = 3
    dut = ControlledDistributedChain(n, bits=5, timeout=1024)
    host = _CC.BusHost(dut)
    seen = {"front_faulted": False, "front_disabled": False}
    config = _cut_config(watchdog_message)
    words = {name: word for name, word in config.encode().items() if word}

    async def write(ctx, node, addr, word):
        # A write while a step runs is refused: the host tries again.
        for _ in range(200):
            error, _ = await host.access(ctx, node, addr, word)
            if not error:
                return
        raise AssertionError(f"write to {node}:{addr:#x} refused 200 times")

    async def read(ctx, node, addr):
        error, word = await host.access(ctx, node, addr, limit=200_000)
        assert not error, (node, hex(addr))
        return word

    def drives(ctx, i):
        return ctx.get(dut.actuator[i].enable), ctx.get(dut.actuator[i].i_ref)

    def watch_front(ctx):
        for i in (0, 1):
            enable, i_ref = drives(ctx, i)
            seen["front_disabled"] |= not enable or i_ref == 0
            seen["front_faulted"] |= bool(ctx.get(dut.board_fault[i]))

    async def bench(ctx):
        for i in range(n):
            ctx.set(dut.sensor[i].q, _word(1.2))       # beyond q_max: the guard pushes back
            for name, word in words.items():
                await write(ctx, i, _WORD[name], word)
            for word in P.REFERENCE_WORDS:
                await write(ctx, i, word.address, 0)
        # One step by hand: its latency sets the period (the step fits in 3/4 of it).
        await write(ctx, P.CONTROL_NODE, _CONTROL, P.CONTROL_STEP)
        await read(ctx, P.CONTROL_NODE, P.control_register("CONTROL_STEPS").address)
        latency = await read(ctx, P.CONTROL_NODE,
                             P.control_register("CONTROL_LATENCY_CYCLES").address)
        period = seen["period"] = latency * 4 // 3
        seen["latency"] = latency
        await write(ctx, P.CONTROL_NODE, P.control_register("CONTROL_PERIOD").address, period)
        steps = P.control_register("CONTROL_STEPS").address
        seen["steps_at_cut"] = await read(ctx, P.CONTROL_NODE, steps)
        # The first step of the timer starts after one period: cut it in its update (a third
        # of a period later; a read now would wait for the step's end).
        await host.tick(ctx, period + period // 3)
        seen["before"] = [drives(ctx, i) for i in range(n)]
        ctx.set(dut.cut, 0b10)
        safe_at = None
        for cycle in range(1, 2 * period + period // 4):
            await ctx.tick()
            watch_front(ctx)
            enable, i_ref = drives(ctx, 2)
            if safe_at is None and not enable and i_ref == 0:
                safe_at = cycle
        seen["safe_at"] = safe_at
        seen["behind_at_end"] = drives(ctx, 2)
        seen["front_at_end"] = [drives(ctx, i) for i in (0, 1)]
        if not restore:
            return
        seen["steps_during_cut"] = await read(ctx, P.CONTROL_NODE, steps) - seen["steps_at_cut"]
        ctx.set(dut.cut, 0)
        for _ in range(2 * period):
            await ctx.tick()
            watch_front(ctx)
        seen["link_down"] = await read(ctx, P.CONTROL_NODE, P.control_register(
            "LINK_DOWN").address)
        seen["fault_words"] = [await read(ctx, i, _WORD["fault"]) for i in range(n)]
        seen["faults"] = await read(ctx, P.CONTROL_NODE, P.control_register("FAULTS").address)
        seen["steps_before_clear"] = await read(ctx, P.CONTROL_NODE, P.control_register(
            "CONTROL_STEPS").address)
        await write(ctx, 2, _WORD["fault_clear"], 1)
        for _ in range(period + period // 2):
            await ctx.tick()
            watch_front(ctx)
        seen["after_clear"] = [drives(ctx, i) for i in range(n)]
        seen["fault_after_clear"] = await read(ctx, 2, _WORD["fault"])
        seen["steps_after_clear"] = await read(ctx, P.CONTROL_NODE, P.control_register(
            "CONTROL_STEPS").address)
        seen["kp"] = [await read(ctx, i, _WORD["kp"]) for i in range(n)]

    _run(dut, bench)
    seen["kp_written"] = words["kp"]
    return seen


def test_joints_behind_a_cut_reach_their_safe_state_within_two_periods():
    """Board 2 behind the cut: zero current, enable low, within two control periods of the cut
    (cycles counted here against CONTROL_PERIOD), the message-watchdog fault latched; boards 0
    and 1 before the cut never fault nor stop driving; after the restore the fault is read
    with its cause, cleared, and the steps resume with the configuration kept (no reset)."""
    seen = _cut_scenario(watchdog_message=True)
    period = seen["period"]
    print(f"\nperiod {period} cycles (step {seen['latency']}), safe state "
          f"{seen['safe_at']} cycles after the cut = {seen['safe_at'] / period:.2f} periods")
    assert all(enable and i_ref for enable, i_ref in seen["before"]), seen["before"]
    assert seen["safe_at"] is not None and seen["safe_at"] <= 2 * period, seen["safe_at"]
    assert seen["behind_at_end"] == (0, 0), "the fault stays latched"
    assert not seen["front_faulted"] and not seen["front_disabled"]
    assert all(enable and i_ref for enable, i_ref in seen["front_at_end"])
    assert seen["link_down"] == 0
    code, cause = decode_fault(seen["fault_words"][2])
    assert code == _MESSAGE_WATCHDOG and cause == 1 << (_MESSAGE_WATCHDOG - 1), \
        seen["fault_words"]
    assert seen["fault_words"][:2] == [0, 0]
    assert seen["faults"] == 0b100, "FAULTS names board 2 after the restore"
    assert seen["fault_after_clear"] == 0
    assert seen["steps_after_clear"] > seen["steps_before_clear"]
    assert all(enable and i_ref for enable, i_ref in seen["after_clear"]), seen["after_clear"]
    assert seen["kp"] == [seen["kp_written"]] * 3, "no board was reset"
    assert seen["steps_during_cut"] <= 1, "no step but the one under way ends in the cut"


@pytest.mark.skipif(not LONG, reason="LINKDYN_LONG=1: the cut without the message watchdog")
def test_without_the_message_watchdog_the_joint_behind_a_cut_keeps_its_current():
    """The safe-state test's check fails with the watchdog off: board 2 behind the cut still
    drives its last current two periods after the cut."""
    seen = _cut_scenario(watchdog_message=False, restore=False)
    assert seen["safe_at"] is None
    enable, i_ref = seen["behind_at_end"]
    assert enable and i_ref


def test_the_step_commands_are_not_the_hosts_and_bad_arguments_are_refused():
    """The boards' private command words answer the host with an error (nothing runs: no
    step is counted); the parameters are checked with what was expected."""
    dut = ControlledDistributedChain(1, bits=5)
    host = _CC.BusHost(dut)
    seen = {}

    async def bench(ctx):
        seen["answers"] = [(await host.access(ctx, 0, address, *write))[0]
                           for address in COMMAND_WORDS.values() for write in ((), (5,))]
        seen["steps"] = (await host.access(ctx, P.CONTROL_NODE, P.control_register(
            "CONTROL_STEPS").address))[1]

    _run(dut, bench)
    assert all(seen["answers"]) and seen["steps"] == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="sequential policy only"):
            ControlledDistributedChain(2, policy="pipelined")
        with pytest.raises(ValueError, match="Board count must be 1 .. 32, not 0"):
            ControlledDistributedChain(0)
        with pytest.raises(TypeError, match="pipelined must be a bool, not 1"):
            ControlledDistributedChain(2, pipelined=1)
        with pytest.raises(TypeError, match="node_target must be a callable"):
            ActuatorCore(base=False, last=True, node_target=3)
        gc.collect()
