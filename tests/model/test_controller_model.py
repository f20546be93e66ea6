"""The controller's golden model against a float control law and hand-computed cases.

The float reference below is written from the control law of the source paper's Fig. 7 (and
docs/controller.md), independently of the operation list: computed-torque feedback with each
term limited, the guard cascade with its range-dependent limit, the torque limit and the
current. It runs in float64 on the *decoded* register words, so the only differences are the
golden model's roundings; their bound is derived per quantity (half an LSB per product,
propagated through the gains; additions, clamps and comparisons of words are exact).
"""

import numpy as np
import pytest

from linkdyn.model import load_robot
from linkdyn.model.controller import (FAULTS, FINE, INPUTS, MODE_BITS, PROGRAM,
                                      REGISTERS, WORD, ControllerConfig, FixedPointRangeError,
                                      JointControllerModel, run_segment)
from linkdyn.model.reference import load_reference_robot

LSB = WORD.resolution


def float_law(p, q, qd, q_ref, qd_ref, qdd_ref, tau_model, integrator):
    """The control law in float64 (paper Fig. 7), on decoded values; returns a dict."""
    fb_p = np.clip(p["kp"] * (q_ref - q), -p["lim_p"], p["lim_p"])
    fb_d = np.clip(p["kd"] * (qd_ref - qd), -p["lim_d"], p["lim_d"])
    qdd_cmd = qdd_ref + fb_p + fb_d
    in_range = (q >= p["q_min"]) & (q <= p["q_max"]) & (np.abs(qd) <= p["qd_max"])
    limit = np.where(in_range, p["guard_small"], p["guard_large"])
    q_guard = np.minimum(np.maximum(q_ref, p["q_min"]), p["q_max"])
    qd_guard = np.clip(p["guard_kp"] * (q_guard - q) + qd_ref, -p["qd_max"], p["qd_max"])
    e_v = qd_guard - qd
    integral = np.clip(integrator + p["guard_ki"] * e_v, -limit, limit)
    tau_guard = np.clip(p["guard_kv"] * e_v + integral, -limit, limit)
    tau_cmd = np.clip(tau_model + tau_guard, -p["tau_max"], p["tau_max"])
    return {"fb_p": fb_p, "fb_d": fb_d, "qdd_cmd": qdd_cmd, "integ_lim": integral,
            "tau_guard": tau_guard, "tau_cmd": tau_cmd,
            "i_ref": tau_cmd * p["current_per_torque"]}


def decoded_parameters(words):
    return {name: REGISTERS[name].format.decode(word) for name, word in words.items()
            if name in REGISTERS}


def golden_batch(words, inputs, integrator):
    """Run feedback and output on a batch (numpy arrays of words)."""
    shape = np.shape(inputs["q"])
    regs = {name: np.full(shape, words.get(name, 0), dtype=np.int64) for name in REGISTERS}
    regs["integrator"] = integrator
    regs.update({name: np.asarray(value, dtype=np.int64) for name, value in inputs.items()})
    regs["zero"] = np.zeros(shape, dtype=np.int64)
    regs["one"] = np.ones(shape, dtype=np.int64)
    flags = {name: np.full(shape, bool(words["mode"] >> bit & 1))
             for name, (bit, _) in MODE_BITS.items()}
    flags["ref_seen"] = flags["msg_seen"] = np.ones(shape, dtype=bool)
    latch = {"cause": np.zeros(shape, dtype=np.int64), "code": np.zeros(shape, dtype=np.int64)}
    run_segment(regs, flags, "feedback")
    run_segment(regs, flags, "output", latch)
    return regs, flags, latch


@pytest.mark.parametrize("robot_name", ["ur5", "panda"])
def test_golden_model_follows_the_float_control_law(robot_name):
    robot = load_robot("ur5") if robot_name == "ur5" else load_reference_robot("panda")
    rng = np.random.default_rng(3)
    n = 2000
    for link in robot.links:
        limits = link.limits
        config = ControllerConfig.for_joint(
            limits, kp=float(rng.uniform(10, 2000)), kd=float(rng.uniform(1, 100)),
            guard_kp=float(rng.uniform(0, 200)), guard_kv=float(rng.uniform(0, 300)),
            guard_ki=float(rng.uniform(0, 5)), current_per_torque=float(rng.uniform(0.01, 2)))
        words = config.encode()
        span = limits.q_max - limits.q_min
        values = {
            "q": rng.uniform(limits.q_min - 0.2 * span, limits.q_max + 0.2 * span, n),
            "qd": rng.uniform(-1.3, 1.3, n) * limits.qd_max,
            "q_ref": rng.uniform(limits.q_min - 0.2 * span, limits.q_max + 0.2 * span, n),
            "qd_ref": rng.uniform(-1.3, 1.3, n) * limits.qd_max,
            "qdd_ref": rng.uniform(-30, 30, n),
            "tau_model": rng.uniform(-1.5, 1.5, n) * limits.tau_max,
        }
        inputs = {name: WORD.encode(value) for name, value in values.items()}
        integrator = WORD.encode(rng.uniform(-1, 1, n) * config.guard_small)
        regs, flags, latch = golden_batch(words, inputs, integrator)
        p = decoded_parameters(words)
        ref = float_law(p, *(WORD.decode(inputs[name]) for name in
                             ("q", "qd", "q_ref", "qd_ref", "qdd_ref", "tau_model")),
                        WORD.decode(integrator))
        half = LSB / 2
        e_v = 2 * half                                   # v_g0 rounding, then exact sums
        bounds = {
            "fb_p": half, "fb_d": half, "qdd_cmd": 2 * half,
            "integ_lim": p["guard_ki"] * e_v + half,
            "tau_guard": p["guard_kv"] * e_v + half + p["guard_ki"] * e_v + half,
        }
        bounds["tau_cmd"] = bounds["tau_guard"]
        bounds["i_ref"] = p["current_per_torque"] * bounds["tau_cmd"] + half
        for name, bound in bounds.items():
            got = WORD.decode(regs[name if name != "i_ref" else "i_ref_raw"])
            error = np.max(np.abs(got - ref[name]))
            assert error <= bound * (1 + 1e-9), f"{robot_name} {link.name} {name}: {error}"
        # The current reaches the actuator only without a fault; faults came from the hard
        # limits here (q, qd drawn beyond them), exactly where the float law says.
        beyond = ((WORD.decode(inputs["q"]) < p["q_hard_min"])
                  | (WORD.decode(inputs["q"]) > p["q_hard_max"])
                  | (np.abs(WORD.decode(inputs["qd"])) > p["qd_hard_max"]))
        np.testing.assert_array_equal(latch["cause"] != 0, beyond)
        np.testing.assert_array_equal(latch["i_ref"], np.where(beyond, 0, regs["i_ref_raw"]))


def encode(**values):
    return {name: int(WORD.encode(value)) for name, value in values.items()}


def test_hand_computed_step():
    """kp 100 1/s^2, error 0.25 rad -> 25, limited to 10; kd 20 1/s, error -0.5 rad/s -> -10,
    limited to 5; qdd_ref 1: qdd_cmd = 1 + 10 - 5 = 6 rad/s^2 (all exact in Q15.16). Guard:
    q = 0.5 inside [-1, 1], reference 0.75: velocity reference 4 (0.25) + 0.5 = 1.5, clamped to
    qd_max 1; error 1 - 0.5 = 0.5; 8 N m s/rad * 0.5 = 4 N m limited to the small 2 N m;
    tau 30 + 2 = 32 N m, within 40; current 32 * 0.125 = 4 A."""
    config = ControllerConfig(
        kp=100, kd=20, lim_p=10, lim_d=5, guard_kp=4, guard_kv=8, guard_ki=0,
        guard_small=2, guard_large=20, q_min=-1, q_max=1, qd_max=1, q_hard_min=-2,
        q_hard_max=2, qd_hard_max=3, tau_max=40, current_per_torque=0.125)
    model = JointControllerModel(config.encode())
    model.strobe(reference=True, message=True)
    w = encode(q=0.5, qd=0.5, q_ref=0.75, qd_ref=0.0, qdd_ref=1.0, tau=30.0)
    q_model, qd_model, qdd_cmd = model.feedback(w["q"], w["qd"], w["q_ref"], w["qd_ref"],
                                                w["qdd_ref"])
    assert (q_model, qd_model) == (w["q_ref"], w["qd_ref"])   # state MUX: reference
    assert WORD.decode(qdd_cmd) == 6.0
    i_ref, enable = model.output(w["tau"])
    assert WORD.decode(model.regs["qd_guard_ref"]) == 1.0
    assert WORD.decode(model.regs["tau_guard"]) == 2.0
    assert WORD.decode(model.regs["tau_cmd"]) == 32.0
    assert (WORD.decode(i_ref), enable) == (4.0, True)


def test_state_mux_measured_gives_the_sensor_state():
    config = ControllerConfig(measured_state=True)
    model = JointControllerModel(config.encode())
    assert model.feedback(111, 222, 333, 444, 555)[:2] == (111, 222)


def test_products_round_half_up_and_saturate():
    model = JointControllerModel({"kp": 1, "lim_p": WORD.max_word, "kd": 0, "lim_d": 0})
    # kp = 2**-16, error = 2**-1: product 2**-17 = half an LSB -> rounds up to one LSB.
    assert model.feedback(0, 0, 1 << 15, 0, 0)[2] == 1
    # -half an LSB rounds up to 0; -1.5 LSB... via error -3 * 2**15: -1.5 -> -1.
    assert model.feedback(0, 0, -(1 << 15), 0, 0)[2] == 0
    assert model.feedback(3 << 15, 0, 0, 0, 0)[2] == -1
    # A product beyond the word saturates.
    model = JointControllerModel({"kp": WORD.max_word, "lim_p": WORD.max_word})
    assert model.feedback(0, 0, WORD.max_word, 0, 0)[2] == WORD.max_word


def test_negative_limit_words_act_as_zero():
    model = JointControllerModel({"kp": int(WORD.encode(10.0)), "lim_p": -5})
    assert model.feedback(0, 0, int(WORD.encode(1.0)), 0, 0)[2] == 0


FAULT_STEPS = {
    "position": dict(q=2.5), "velocity": dict(qd=4.0),
}


def quiet(**kwargs):
    values = dict(kp=0, kd=0, guard_small=1, guard_large=5, q_min=-1, q_max=1, qd_max=1,
                  q_hard_min=-2, q_hard_max=2, qd_hard_max=3, tau_max=10,
                  current_per_torque=0.5)
    values.update(kwargs)
    return ControllerConfig(**values)


def run_steps(model, n, q=0.0, qd=0.0, tau=0.0, reference=True, message=True):
    results = []
    for _ in range(n):
        model.strobe(reference=reference, message=message)
        w = encode(q=q, qd=qd, tau=tau)
        model.feedback(w["q"], w["qd"], w["q"], w["qd"], 0)
        results.append(model.output(w["tau"]) + (model.fault_code,))
    return results


def test_position_and_velocity_faults_latch_at_once_first_cause_first():
    model = JointControllerModel(quiet().encode())
    assert run_steps(model, 1) == [(0, True, 0)]
    (i_ref, enable, code), = run_steps(model, 1, q=2.5, qd=4.0)
    assert (i_ref, enable, code) == (0, False, 1)
    assert model.fault_cause == 0b11
    # Back in range: still latched until cleared.
    assert run_steps(model, 2) == [(0, False, 1)] * 2
    model.clear()
    assert run_steps(model, 1) == [(0, True, 0)]
    assert model.read("fault") == 0


def test_torque_saturation_trips_after_its_limit_of_steps():
    model = JointControllerModel(quiet(tau_saturation_cycles=3).encode())
    codes = [code for _, _, code in run_steps(model, 6, tau=50.0)]
    assert codes == [0, 0, 0, 3, 3, 3]
    code = next(c for c, (name, _) in FAULTS.items() if name == "torque_saturation")
    assert code == 3


@pytest.mark.parametrize("which, code", [("reference", 4), ("message", 5)])
def test_watchdogs_trip_when_their_strobe_stays_away(which, code):
    config = quiet(watchdog_cycles=2, watchdog_reference=True, watchdog_message=True)
    model = JointControllerModel(config.encode())
    kwargs = {"reference": which != "reference", "message": which != "message"}
    codes = [c for _, _, c in run_steps(model, 4, **kwargs)]
    assert codes == [0, 0, code, code]
    # A disabled watchdog never trips.
    model = JointControllerModel(quiet(watchdog_cycles=0).encode())
    assert [c for _, _, c in run_steps(model, 3, reference=False, message=False)] == [0] * 3


def test_encoder_refuses_values_that_do_not_fit():
    with pytest.raises(FixedPointRangeError, match="kp"):
        ControllerConfig(kp=40000.0).encode()
    with pytest.raises(FixedPointRangeError, match="current_per_torque"):
        ControllerConfig(current_per_torque=9.0).encode()
    with pytest.raises(ValueError, match="tau_max .* must be >= 0"):
        ControllerConfig(tau_max=-1.0).encode()
    with pytest.raises(ValueError, match="watchdog_cycles .* integer"):
        ControllerConfig(watchdog_cycles=2.5).encode()
    with pytest.raises(TypeError, match="kd"):
        ControllerConfig(kd="3").encode()


def test_encoder_words_decode_to_the_configuration():
    limits = load_reference_robot("panda").links[1].limits
    config = ControllerConfig.for_joint(limits)
    words = config.encode()
    assert WORD.decode(words["guard_small"]) == pytest.approx(0.04 * limits.tau_max, abs=LSB)
    assert WORD.decode(words["q_max"]) == pytest.approx(limits.q_max, abs=LSB)
    assert FINE.decode(words["current_per_torque"]) == pytest.approx(0.1, abs=FINE.resolution)
    assert words["mode"] == 1 << MODE_BITS["drive_enable"][0]


def test_program_reads_only_what_is_written_first():
    """Every scratch or output register a segment reads was written earlier in the step."""
    written = {name for name, reg in REGISTERS.items() if reg.kind in ("parameter", "state")}
    written |= set(INPUTS)
    for segment in ("feedback", "output"):
        for op in PROGRAM[segment]:
            if op.kind in ("and", "safety", "clear_fault"):
                operands = (op.a,) if op.kind == "safety" else ()
            else:
                operands = tuple(x for x in (op.a, op.b) if x)
            for operand in operands:
                assert operand in written, f"{segment}: {op.kind} reads {operand} too early"
            if op.dst in REGISTERS:
                written.add(op.dst)


def test_public_names_exist():
    import linkdyn.model.controller as module
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing
