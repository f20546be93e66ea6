"""The joint controller gateware equals the controller's golden model word for word.

Every case runs the :class:`~linkdyn.gateware.controller.JointController` in the Amaranth
simulator and :class:`~linkdyn.model.controller.JointControllerModel` on the same register words,
inputs, strobes and clears, and compares after every control step: the model inputs to the node
(``q, qd, qdd``), ``tau_guard``, ``tau_cmd``, the current reference word and ``enable``, the
fault code and cause, and *every* register-file word read back through the register port (all
intermediates). Configurations come from real joints (UR5, Panda limits and effort limits) with
random gains, and from random words in every register ("any register contents"); states and
references are drawn inside and beyond the limits, so feedback terms saturate, the guard
switches at the range limits and every fault cause trips.
"""

import os
import warnings

import numpy as np
import pytest
from amaranth.sim import Simulator

from linkdyn.gateware.controller import (JointController, MUL_CYCLES, OP_CYCLES,
                                        segment_cycles)
from linkdyn.model import load_robot
from linkdyn.model.controller import (FAULTS, PROGRAM, REGISTERS,
                                      SPECIAL_REGISTERS, WORD, ControllerConfig,
                                      JointControllerModel)
from linkdyn.model.reference import load_reference_robot

LONG = bool(os.environ.get("LINKDYN_LONG"))
WORD_MIN, WORD_MAX = -(1 << 31), (1 << 31) - 1


def signed32(word):
    word &= 0xFFFFFFFF
    return word - (1 << 32) if word >> 31 else word


def address(name):
    return REGISTERS[name].address if name in REGISTERS else SPECIAL_REGISTERS[name].address


def simulate(words, steps, pipelined=True):
    """Run the gateware over ``steps``; return one record per step.

    ``steps`` is a list of dicts with ``inputs`` (q, qd, q_ref, qd_ref, qdd_ref words),
    ``tau_model`` (word), optional ``reference`` / ``message`` strobes (given before the step),
    ``clear`` (a fault clear before the step), ``write`` (register words written before it).
    """
    dut = JointController(pipelined=pipelined)
    records = []

    async def write(ctx, name, word):
        ctx.set(dut.reg.addr, address(name))
        ctx.set(dut.reg.w_data, word & 0xFFFFFFFF)
        ctx.set(dut.reg.w_en, 1)
        await ctx.tick()
        ctx.set(dut.reg.w_en, 0)

    async def read(ctx, name):
        ctx.set(dut.reg.addr, address(name))
        await ctx.tick()
        return ctx.get(dut.reg.r_data)

    async def pulse(ctx, signal):
        ctx.set(signal, 1)
        await ctx.tick()
        ctx.set(signal, 0)

    async def wait(ctx, signal):
        cycles = 0
        while True:
            await ctx.tick()
            cycles += 1
            if ctx.get(signal):
                return cycles
            assert cycles < 1000, "the controller never finished"

    async def testbench(ctx):
        for name, word in words.items():
            await write(ctx, name, word)
        for step in steps:
            for name, word in step.get("write", {}).items():
                await write(ctx, name, word)
            if step.get("clear"):
                await pulse(ctx, dut.fault_clear)
                clear_cycles = 1
                while ctx.get(dut.busy):
                    await ctx.tick()
                    clear_cycles += 1
                assert clear_cycles == dut.cycles["clear"] + 1
            if step.get("reference"):
                await pulse(ctx, dut.reference.strobe)
            if step.get("message"):
                await pulse(ctx, dut.message_strobe)
            inputs = step["inputs"]
            ctx.set(dut.sensor.q, inputs["q"])
            ctx.set(dut.sensor.qd, inputs["qd"])
            ctx.set(dut.reference.q, inputs["q_ref"])
            ctx.set(dut.reference.qd, inputs["qd_ref"])
            ctx.set(dut.reference.qdd, inputs["qdd_ref"])
            await pulse(ctx, dut.start)
            feedback_cycles = await wait(ctx, dut.model.valid)
            record = {"model": (ctx.get(dut.model.q), ctx.get(dut.model.qd),
                                ctx.get(dut.model.qdd))}
            ctx.set(dut.model.tau, step["tau_model"])
            await pulse(ctx, dut.model.tau_valid)
            output_cycles = await wait(ctx, dut.done)
            record.update(
                i_ref=ctx.get(dut.actuator.i_ref), enable=bool(ctx.get(dut.actuator.enable)),
                tau_cmd=ctx.get(dut.tau_cmd), tau_guard=ctx.get(dut.tau_guard),
                fault=bool(ctx.get(dut.fault)), fault_code=ctx.get(dut.fault_code),
                cycles=(feedback_cycles, output_cycles),
                expected_cycles=(dut.cycles["feedback"], dut.cycles["output"]))
            await ctx.tick()
            record["registers"] = {name: await read(ctx, name) for name in REGISTERS}
            record["fault_register"] = await read(ctx, "fault")
            records.append(record)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        sim.run()
    return records


def golden(words, steps):
    """The golden model over the same steps, records like :func:`simulate`'s."""
    model = JointControllerModel(words)
    records = []
    for step in steps:
        for name, word in step.get("write", {}).items():
            model.write(name, word)
        if step.get("clear"):
            model.clear()
        model.strobe(reference=step.get("reference", False), message=step.get("message", False))
        inputs = step["inputs"]
        q_model = model.feedback(inputs["q"], inputs["qd"], inputs["q_ref"], inputs["qd_ref"],
                                 inputs["qdd_ref"])
        i_ref, enable = model.output(step["tau_model"])
        records.append({
            "model": q_model, "i_ref": i_ref, "enable": enable,
            "tau_cmd": model.regs["tau_cmd"], "tau_guard": model.regs["tau_guard"],
            "fault": model.fault_code != 0, "fault_code": model.fault_code,
            "registers": {name: model.read(name) for name in REGISTERS},
            "fault_register": model.read("fault")})
    return records


def assert_equal(words, steps, pipelined=True):
    """Simulate and compare every step; return both record lists."""
    rtl = simulate(words, steps, pipelined)
    ref = golden(words, steps)
    for index, (got, want) in enumerate(zip(rtl, ref)):
        for key in want:
            assert got[key] == want[key], (f"step {index}: {key} differs: gateware "
                                           f"{got[key]!r}, golden model {want[key]!r}")
        # The request is taken at the clock edge of its pulse; the result follows CYCLES later.
        assert got["cycles"] == got["expected_cycles"]
    return rtl, ref


def encode_inputs(q, qd, q_ref, qd_ref, qdd_ref):
    return {name: int(WORD.encode(value)) for name, value in
            zip(("q", "qd", "q_ref", "qd_ref", "qdd_ref"), (q, qd, q_ref, qd_ref, qdd_ref))}


def random_joint_case(rng, limits, n_steps):
    """A configuration from a joint's limits with random gains, and random steps inside and
    beyond the range (references too), torques up to 1.5 tau_max."""
    config = ControllerConfig.for_joint(
        limits, kp=float(rng.uniform(10, 2000)), kd=float(rng.uniform(1, 100)),
        lim_p=float(rng.uniform(0, 200)), lim_d=float(rng.uniform(0, 200)),
        guard_kp=float(rng.uniform(0, 200)), guard_kv=float(rng.uniform(0, 500)),
        guard_ki=float(rng.uniform(0, 7)), current_per_torque=float(rng.uniform(0.001, 2)),
        measured_state=bool(rng.integers(2)), drive_enable=bool(rng.random() < 0.9),
        tau_saturation_cycles=int(rng.integers(0, 4)), watchdog_cycles=int(rng.integers(0, 4)),
        watchdog_reference=bool(rng.random() < 0.3), watchdog_message=bool(rng.random() < 0.3))
    span = limits.q_max - limits.q_min
    steps = []
    for _ in range(n_steps):
        q = rng.uniform(limits.q_min - 0.15 * span, limits.q_max + 0.15 * span)
        if rng.random() < 0.7:   # mostly in range
            q = rng.uniform(limits.q_min, limits.q_max)
        qd = rng.uniform(-1.2, 1.2) * limits.qd_max
        q_ref = float(np.clip(q + rng.normal(0, 0.2), -30000, 30000))
        steps.append({
            "inputs": encode_inputs(q, qd, q_ref, rng.uniform(-1.2, 1.2) * limits.qd_max,
                                    rng.uniform(-20, 20)),
            "tau_model": int(WORD.encode(rng.uniform(-1.5, 1.5) * limits.tau_max)),
            "reference": bool(rng.random() < 0.7), "message": bool(rng.random() < 0.7),
            "clear": bool(rng.random() < 0.2)})
    return config.encode(), steps


@pytest.mark.parametrize("pipelined", [True, False])
@pytest.mark.parametrize("robot_name", ["ur5", "panda"])
def test_controller_matches_golden_model_on_robot_joints(robot_name, pipelined):
    robot = load_robot("ur5") if robot_name == "ur5" else load_reference_robot("panda")
    rng = np.random.default_rng(14 if robot_name == "ur5" else 15)
    cases = 6 if LONG else 2
    for link in robot.links:
        for _ in range(cases):
            words, steps = random_joint_case(rng, link.limits, 12 if LONG else 6)
            assert_equal(words, steps, pipelined)


def random_word(rng):
    roll = rng.random()
    if roll < 0.2:
        return int(rng.choice([WORD_MIN, WORD_MIN + 1, -1, 0, 1, WORD_MAX - 1, WORD_MAX]))
    if roll < 0.6:
        return int(rng.integers(-(1 << 22), 1 << 22))
    return int(rng.integers(WORD_MIN, WORD_MAX, endpoint=True))


@pytest.mark.parametrize("pipelined", [True, False])
def test_controller_matches_golden_model_for_any_register_contents(pipelined):
    """Random words in every register (negative limits, full-range gains, extreme inputs):
    saturation everywhere, and still word for word."""
    rng = np.random.default_rng(7 if pipelined else 8)
    for _ in range(8 if LONG else 3):
        words = {name: random_word(rng) for name, reg in REGISTERS.items()}
        words["mode"] = int(rng.integers(16))
        words["tau_saturation_cycles"] = int(rng.integers(0, 3))
        words["watchdog_cycles"] = int(rng.integers(0, 3))
        steps = [{"inputs": {name: random_word(rng)
                             for name in ("q", "qd", "q_ref", "qd_ref", "qdd_ref")},
                  "tau_model": random_word(rng), "reference": bool(rng.integers(2)),
                  "message": bool(rng.integers(2)), "clear": bool(rng.integers(2)),
                  "write": {"integrator": random_word(rng)} if rng.random() < 0.3 else {}}
                 for _ in range(6)]
        assert_equal(words, steps, pipelined)


def panda_joint(index=3):
    return load_reference_robot("panda").links[index].limits


def quiet_config(limits, **kwargs):
    """A configuration with the watchdogs off and a long saturation time."""
    return ControllerConfig.for_joint(limits, **kwargs)


def hold_steps(limits, n, q=None, qd=0.0, tau=0.0, **extra):
    q = (limits.q_min + limits.q_max) / 2 if q is None else q
    return [{"inputs": encode_inputs(q, qd, q, qd, 0.0), "tau_model": int(WORD.encode(tau)),
             "reference": True, "message": True, **extra} for _ in range(n)]


def test_feedback_terms_saturate_individually():
    limits = panda_joint()
    config = quiet_config(limits, kp=1000.0, kd=100.0, lim_p=5.0, lim_d=3.0)
    mid = (limits.q_min + limits.q_max) / 2
    steps = [{"inputs": encode_inputs(mid, 0.0, mid + 0.5, 1.0, 2.0), "tau_model": 0},
             {"inputs": encode_inputs(mid, 0.0, mid - 0.5, -1.0, 2.0), "tau_model": 0},
             {"inputs": encode_inputs(mid, 0.0, mid + 0.001, 0.01, 2.0), "tau_model": 0}]
    rtl, _ = assert_equal(config.encode(), steps)
    decode = WORD.decode
    assert decode(rtl[0]["model"][2]) == pytest.approx(2.0 + 5.0 + 3.0, abs=1e-4)
    assert decode(rtl[1]["model"][2]) == pytest.approx(2.0 - 5.0 - 3.0, abs=1e-4)
    # Unsaturated: 2 + 1000 (q_ref - q) + 100 qd_ref of the encoded words, within the rounding
    # of the two products and the gain words (a few LSB).
    words = steps[2]["inputs"]
    expected = (decode(words["qdd_ref"]) + decode(config.encode()["kp"]) *
                (decode(words["q_ref"]) - decode(words["q"]))
                + decode(config.encode()["kd"]) * decode(words["qd_ref"]))
    assert decode(rtl[2]["model"][2]) == pytest.approx(expected, abs=3 * WORD.resolution)


def test_guard_switches_to_its_large_limit_outside_the_range():
    limits = panda_joint()
    config = quiet_config(limits, guard_kp=100.0, guard_kv=1000.0, guard_ki=0.0,
                          guard_small=2.0, guard_large=30.0, tau_max=87.0)
    inside = limits.q_max - 0.01
    outside = limits.q_max + 0.05
    # The reference lies beyond q_max in both cases: the guard reference is clamped to q_max.
    steps = [{"inputs": encode_inputs(inside, 0.0, outside + 0.2, 0.0, 0.0), "tau_model": 0},
             {"inputs": encode_inputs(outside, 0.0, outside + 0.2, 0.0, 0.0), "tau_model": 0},
             {"inputs": encode_inputs(0.0, 1.1 * limits.qd_max, 0.0, 0.0, 0.0),
              "tau_model": 0}]
    rtl, _ = assert_equal(config.encode(), steps)
    decode = WORD.decode
    # Inside: the guard pulls towards q_max (positive) but only with the small limit.
    assert decode(rtl[0]["tau_guard"]) == pytest.approx(2.0)
    # Outside: it pushes back (negative: q_max - q < 0) with the large limit.
    assert decode(rtl[1]["tau_guard"]) == pytest.approx(-30.0)
    # Too fast: the velocity reference is clamped to qd_max, the guard brakes, large limit.
    assert decode(rtl[2]["tau_guard"]) == pytest.approx(-30.0)


FAULT_CASES = {
    "position": lambda limits: hold_steps(limits, 3, q=limits.q_max + 0.5),
    "velocity": lambda limits: hold_steps(limits, 3, qd=2 * limits.qd_max),
    "torque_saturation": lambda limits: hold_steps(limits, 5, tau=2 * limits.tau_max),
    "reference_watchdog": lambda limits: [dict(s, reference=False)
                                          for s in hold_steps(limits, 5)],
    "message_watchdog": lambda limits: [dict(s, message=False) for s in hold_steps(limits, 5)],
}


@pytest.mark.parametrize("cause", list(FAULT_CASES))
def test_each_fault_cause_latches_until_cleared(cause):
    limits = panda_joint()
    config = quiet_config(limits, tau_saturation_cycles=2, watchdog_cycles=2,
                          watchdog_reference=True, watchdog_message=True)
    code = next(c for c, (name, _) in FAULTS.items() if name == cause)
    steps = hold_steps(limits, 2) + FAULT_CASES[cause](limits) + hold_steps(limits, 2) \
        + [dict(hold_steps(limits, 1)[0], clear=True)] + hold_steps(limits, 1)
    rtl, _ = assert_equal(config.encode(), steps)
    first_fault = next(i for i, r in enumerate(rtl) if r["fault"])
    # Before: current flows; the counters need their limit + 1 steps.
    assert all(r["enable"] and not r["fault"] for r in rtl[:first_fault])
    expected_step = 2 + {"position": 0, "velocity": 0}.get(cause, 2)
    assert first_fault == expected_step
    for record in rtl[first_fault:-2]:
        assert record["fault_code"] == code
        assert record["fault_register"] & 0x7 == code
        assert record["fault_register"] >> 8 & (1 << (code - 1))
        assert record["i_ref"] == 0 and not record["enable"]
    # Cleared, the cause gone: the current flows again.
    assert not rtl[-2]["fault"] and rtl[-2]["enable"] and not rtl[-1]["fault"]


def test_disabled_drive_gives_zero_current_without_a_fault():
    limits = panda_joint()
    config = quiet_config(limits, drive_enable=False)
    rtl, _ = assert_equal(config.encode(), hold_steps(limits, 2, tau=10.0))
    assert all(r["i_ref"] == 0 and not r["enable"] and not r["fault"] for r in rtl)
    assert WORD.decode(rtl[0]["tau_cmd"]) == pytest.approx(10.0)


def test_integrator_winds_up_only_to_the_guard_limit():
    limits = panda_joint()
    config = quiet_config(limits, guard_kp=0.0, guard_kv=0.0, guard_ki=1.0, guard_small=1.5,
                          guard_large=20.0)
    mid = (limits.q_min + limits.q_max) / 2
    steps = [{"inputs": encode_inputs(mid, 0.0, mid, 0.4, 0.0), "tau_model": 0,
              "reference": True, "message": True} for _ in range(6)]
    rtl, _ = assert_equal(config.encode(), steps)
    integral = [WORD.decode(signed32(r["registers"]["integrator"])) for r in rtl]
    # 0.4 N m per step (ki e = 1 * 0.4), clamped at 1.5 N m.
    assert integral == pytest.approx([0.4, 0.8, 1.2, 1.5, 1.5, 1.5], abs=1e-4)


@pytest.mark.parametrize("pipelined", [True, False])
def test_cycles_per_control_step_are_the_programs(pipelined):
    dut = JointController(pipelined=pipelined)
    dut._MustUse__silence = True   # only its timing attributes are read
    muls = {name: sum(op.kind == "mul" for op in PROGRAM[name]) for name in PROGRAM}
    for name in PROGRAM:
        assert dut.cycles[name] == (dut.op_cycles * len(PROGRAM[name])
                                    + (dut.mul_cycles - dut.op_cycles) * muls[name])
    assert dut.cycles == segment_cycles(pipelined)
    assert (dut.op_cycles, dut.mul_cycles) == ((OP_CYCLES, MUL_CYCLES) if pipelined
                                               else (2, 6))


def test_register_port_waits_while_busy():
    """A write given while a segment runs is taken when it ends (w_ready), not lost."""
    dut = JointController()
    seen = {}

    async def testbench(ctx):
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        await ctx.tick()
        assert ctx.get(dut.busy) and not ctx.get(dut.reg.w_ready)
        ctx.set(dut.reg.addr, REGISTERS["kp"].address)
        ctx.set(dut.reg.w_data, 12345)
        ctx.set(dut.reg.w_en, 1)
        while not ctx.get(dut.reg.w_ready):
            await ctx.tick()
        await ctx.tick()
        ctx.set(dut.reg.w_en, 0)
        await ctx.tick()
        seen["kp"] = ctx.get(dut.reg.r_data)
        ctx.set(dut.reg.addr, SPECIAL_REGISTERS["mode"].address)
        await ctx.tick()
        seen["mode"] = ctx.get(dut.reg.r_data)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert seen == {"kp": 12345, "mode": 0}


def test_public_names_exist():
    import linkdyn.gateware.controller as module
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing
