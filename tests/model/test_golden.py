"""The fixed-point golden model (``rnea_fixed``) against the float model, on real robots.

Accuracy bounds: :data:`BOUNDS` are the per-joint maxima measured on the 10,000 random states of
``python -m linkdyn.model.accuracy`` (docs/accuracy.md), rounded up to three significant digits.
The tests here use the first 2,000 of those states (``random_states`` draws them in order) and
assert the 10,000-state bounds; one test re-measures all 10,000 and checks that the bounds are
still the measured ones (not loose). UR5, UR10, Puma 560: built-in robots; Panda:
example-robot-data URDF up to ``panda_hand``. Friction "on" is the robot's own (Puma 560) or the
typical friction of :data:`linkdyn.model.accuracy.TYPICAL_FRICTION`.

Also: the zero state, states at the limits, saturation with the overflow flag, inputs and robot
constants that do not fit, the friction path bit by bit, external wrenches, batch shapes, and
the float interpreter of the error budget.
"""

import math
from dataclasses import replace

import numpy as np
import pytest

from linkdyn.model import Friction, Link, Robot, regressor, rnea
from linkdyn.model.accuracy import (ERROR_SOURCES, ROBOTS, limit_states,
                                    main, measured_bounds, microprogram_float, random_states,
                                    random_wrenches)
from linkdyn.model.fixedpoint import Q15_16, FixedPointRangeError
from linkdyn.model.golden import encode_robot, microprogram, rnea_fixed
from linkdyn.model.tables import CORDIC

from support.robots import robot_case

SAMPLE = 2_000
MAX_WORD, MIN_WORD = Q15_16.max_word, Q15_16.min_word

#: Measured on 10,000 random states (seed 20261130) by ``python -m linkdyn.model.accuracy``,
#: rounded up to 3 significant digits, N·m: per-joint maxima on random states (``joints``) and
#: with random wrenches on the last and middle link (``wrench``); maxima over all joints on the
#: 2,000 states at the limits (``limits``) and at the zero state (``zero``).
BOUNDS = {
    "ur5": {
        "off": dict(joints=(9.25e-06, 1.05e-05, 6.23e-06, 4.61e-06, 2.96e-06, 1.1e-06),
                    limits=4.61e-06, zero=5.44e-06,
                    wrench=(1.07e-05, 1.01e-05, 6.94e-06, 4.98e-06, 3.29e-06, 1.52e-06)),
        "on": dict(joints=(1.8e-05, 1.55e-05, 1.61e-05, 1.46e-05, 1.38e-05, 1.12e-05),
                   limits=4.71e-06, zero=5.44e-06,
                   wrench=(1.64e-05, 1.38e-05, 1.54e-05, 1.51e-05, 1.42e-05, 1.13e-05)),
    },
    "ur10": {
        "off": dict(joints=(1.75e-05, 1.85e-05, 9.4e-06, 4.65e-06, 2.82e-06, 1.06e-06),
                    limits=6.47e-06, zero=1.69e-06,
                    wrench=(1.64e-05, 1.84e-05, 9.09e-06, 5.56e-06, 3.21e-06, 1.5e-06)),
        "on": dict(joints=(1.87e-05, 1.94e-05, 1.52e-05, 1.43e-05, 1.34e-05, 1.34e-05),
                   limits=6.47e-06, zero=1.69e-06,
                   wrench=(1.64e-05, 1.9e-05, 1.53e-05, 1.54e-05, 1.54e-05, 1.33e-05)),
    },
    "puma560": {
        "off": dict(joints=(1.04e-05, 8.52e-06, 6.87e-06, 3.76e-06, 3.04e-06, 1.06e-06),
                    limits=7.82e-06, zero=3.1e-06,
                    wrench=(1.13e-05, 1.07e-05, 6.13e-06, 4.11e-06, 3.31e-06, 1.45e-06)),
        "on": dict(joints=(0.000129, 4.54e-05, 2.85e-05, 7.81e-06, 5.73e-06, 6.6e-06),
                   limits=1.14e-05, zero=3.1e-06,
                   wrench=(0.000126, 4.63e-05, 2.92e-05, 8.12e-06, 5.47e-06, 6.82e-06)),
    },
    "panda": {
        "off": dict(joints=(1.1e-05, 1.54e-05, 9.33e-06, 7.61e-06, 4.51e-06, 3.62e-06, 1.11e-06),
                    limits=1.02e-05, zero=1.02e-06,
                    wrench=(1.12e-05, 1.67e-05, 9.95e-06, 8.42e-06, 4.49e-06, 4.03e-06, 1.54e-06)),
        "on": dict(joints=(1.76e-05, 1.72e-05, 1.75e-05, 1.9e-05, 1.7e-05, 1.54e-05, 1.5e-05),
                   limits=1.16e-05, zero=1.02e-06,
                   wrench=(1.47e-05, 1.92e-05, 1.48e-05, 1.58e-05, 1.77e-05, 1.5e-05, 1.53e-05)),
    },
}

CASES = [(name, case) for name in ROBOTS for case in ("off", "on")]




# ----------------------------------------------------------------------------------------------
# Accuracy against the float model
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, case", CASES)
def test_error_within_the_measured_bound_per_joint(robots, name, case):
    robot = robot_case(robots, name, case)
    q, qd, qdd = random_states(robots[name], SAMPLE)
    fixed = rnea_fixed(robot, q, qd, qdd)
    error = np.max(np.abs(fixed.tau - rnea(robot, q, qd, qdd)), axis=0)
    assert not fixed.overflow.any()
    assert np.all(error <= BOUNDS[name][case]["joints"]), error
    assert np.all(error > 0)  # the comparison is real: Q15.16 is not exact


def test_bounds_are_the_ones_measured_on_10000_states(robots):
    """The documented bounds hold on all 10,000 states and are tight (within 1 %)."""
    names = [name for name in ROBOTS if name in robots]
    measured = measured_bounds(robots=names)
    for name in names:
        for case in ("off", "on"):
            got = measured[name][f"friction {case}"]
            assert got["states"] == 10_000
            bound = BOUNDS[name][case]
            for key, values in (("joints", got["max_per_joint"]),
                                ("wrench", got["wrench_max_per_joint"])):
                assert np.all(np.array(values) <= bound[key]), (name, case, key, values)
                assert np.all(np.array(bound[key]) <= np.array(values) * 1.01), \
                    (name, case, key, values)
            for key, value in (("limits", got["limits_max"]), ("zero", got["zero_state_max"])):
                assert value <= bound[key] <= value * 1.01, (name, case, key, value)
            assert got["max"] == max(got["max_per_joint"])


@pytest.mark.parametrize("name", ROBOTS)
def test_zero_state_gravity_only_matches_float(robots, name):
    robot = robot_case(robots, name, "off")
    zero = np.zeros(robot.n)
    fixed = rnea_fixed(robot, zero, zero, zero)
    reference = rnea(robot, zero, zero, zero)
    assert fixed.tau.shape == (robot.n,) and not fixed.overflow.any()
    assert np.max(np.abs(fixed.tau - reference)) <= BOUNDS[name]["off"]["zero"]
    # At rest the friction term (F_o = 0) is F_c atan(0) of the CORDIC, whose residual angle
    # is not exactly 0: a word of the tau format's LSBs, or none (below half an LSB).
    friction = robot_case(robots, name, "on")
    on = rnea_fixed(friction, zero, zero, zero)
    atan_zero = int(CORDIC.atan(np.array([0]))[0])
    coulomb = [round_half_up(words["F_c"] * atan_zero, 30) for words in encode_robot(friction)]
    assert np.array_equal(on.tau_words - fixed.tau_words, coulomb)


@pytest.mark.parametrize("name, case", CASES)
def test_states_at_the_joint_limits(robots, name, case):
    robot = robot_case(robots, name, case)
    q, qd, qdd = limit_states(robots[name], SAMPLE)
    ranges_low, ranges_high = robots[name].q_limits()
    assert np.all((q == ranges_low) | (q == ranges_high))
    assert np.array_equal(q[0], ranges_low) and np.array_equal(q[1], ranges_high)
    fixed = rnea_fixed(robot, q, qd, qdd)
    assert not fixed.overflow.any()
    assert np.max(np.abs(fixed.tau - rnea(robot, q, qd, qdd))) <= BOUNDS[name][case]["limits"]


# ----------------------------------------------------------------------------------------------
# Saturation and range errors
# ----------------------------------------------------------------------------------------------

def heavy_planar_arm():
    """Two links, axes horizontal (gravity along -y): joint 1 needs 44,150 N·m at q = 0."""
    return Robot("planar", (
        Link("upper", a=1.0, mass=1.0, com=[-0.5, 0, 0], inertia=np.diag([0.01, 0.1, 0.1])),
        Link("lower", a=1.0, mass=3000.0, com=[-0.5, 0, 0],
             inertia=np.diag([1.0, 250.0, 250.0])),
    ), gravity=[0.0, -9.81, 0.0])


@pytest.mark.parametrize("q, word", [(0.0, MAX_WORD), (math.pi, MIN_WORD)])
def test_torque_beyond_q15_16_saturates_and_flags_that_node_only(q, word):
    arm = heavy_planar_arm()
    state = np.array([q, 0.0])
    reference = rnea(arm, state, [0, 0], [0, 0])
    assert abs(reference[0]) > 44_000 and abs(reference[1]) < 20_000
    fixed = rnea_fixed(arm, state, [0, 0], [0, 0], fmt=Q15_16)
    assert fixed.overflow.tolist() == [True, False]
    assert fixed.tau_words[0] == word
    assert fixed.tau[0] == Q15_16.decode(word)
    assert abs(fixed.tau[1] - reference[1]) <= 1e-6 * abs(reference[1])


@pytest.mark.parametrize("joint, qdd, word", [(0, 30_000.0, MAX_WORD), (1, -30_000.0, MIN_WORD)])
def test_huge_acceleration_saturates_with_the_float_sign(robots, joint, qdd, word):
    robot = robot_case(robots, "ur10", "off")
    acceleration = np.zeros(6)
    acceleration[joint] = qdd
    reference = rnea(robot, np.zeros(6), np.zeros(6), acceleration)
    assert abs(reference[joint]) > 32_768
    fixed = rnea_fixed(robot, np.zeros(6), np.zeros(6), acceleration, fmt=Q15_16)
    assert fixed.overflow[joint] and fixed.tau_words[joint] == word
    assert not fixed.overflow[-1]  # the hand's node computes nothing out of range


def test_overflow_is_per_state_in_a_batch():
    arm = heavy_planar_arm()
    q = np.array([[0.0, 0.0], [math.pi / 2, 0.0], [math.pi, 0.0]])  # arm up: no torque
    fixed = rnea_fixed(arm, q, np.zeros(2), np.zeros(2), fmt=Q15_16)
    assert fixed.overflow.tolist() == [[True, False], [False, False], [True, False]]
    assert fixed.tau_words[:, 0].tolist()[0::2] == [MAX_WORD, MIN_WORD]


@pytest.mark.parametrize("quantity, joint, value, pattern", [
    ("q", 2, 1e6, r"node 3 q = .*1000000\.0.* does not fit Q5\.26"),     # NODE_FORMATS.q
    ("qd", 0, -4e4, r"node 1 qd = .*-40000\.0.* does not fit Q5\.26"),
    ("qdd", 5, math.nan, r"node 6 qdd = .*nan.* is not finite"),
])
def test_inputs_that_do_not_fit_raise_naming_node_and_quantity(robots, quantity, joint, value,
                                                               pattern):
    robot = robot_case(robots, "ur5", "off")
    state = {name: np.zeros((4, 6)) for name in ("q", "qd", "qdd")}
    state[quantity][2, joint] = value
    with pytest.raises(FixedPointRangeError, match=pattern):
        rnea_fixed(robot, state["q"], state["qd"], state["qdd"])


def test_external_wrench_that_does_not_fit_raises_naming_node_and_component(robots):
    robot = robot_case(robots, "ur5", "off")
    f_ext = np.zeros((6, 6))
    f_ext[4, 4] = 1e6
    with pytest.raises(FixedPointRangeError, match=r"node 5 mu_ext_y = .*1000000\.0"):
        rnea_fixed(robot, np.zeros(6), np.zeros(6), np.zeros(6), f_ext=f_ext)


@pytest.mark.parametrize("change, pattern", [
    (dict(mass=40_000.0), r"node 2 \('lower'\) constant m = .*40000\.0.* does not fit"),
    (dict(a=2.5), r"node 2 \('lower'\) constant r_x = .*2\.5.* does not fit"),
    (dict(friction=Friction(coulomb=1e5)), r"node 2 \('lower'\) constant F_c = .*100000\.0"),
    (dict(inertia=np.diag([1.0, 4e4, 4e4])), r"node 2 \('lower'\) constant I_yy = "),
])
def test_robot_constant_that_does_not_fit_raises_from_encode_robot(change, pattern):
    arm = heavy_planar_arm()
    lower = replace(arm.links[1], **change)
    robot = replace(arm, links=(arm.links[0], lower))
    with pytest.raises(FixedPointRangeError, match=pattern):
        encode_robot(robot, Q15_16)      # the heavy arm's 3,000 kg fit Q15.16, not NODE_FORMATS
    with pytest.raises(FixedPointRangeError, match=pattern):
        rnea_fixed(robot, [0.1, 0.2], [0, 0], [0, 0], fmt=Q15_16)


# ----------------------------------------------------------------------------------------------
# Friction, external wrenches
# ----------------------------------------------------------------------------------------------

def round_half_up(numerator, shift):
    return (numerator + (1 << (shift - 1))) >> shift


@pytest.mark.parametrize("name", ["puma560", "ur5"])
def test_friction_adds_exactly_the_documented_friction_word(robots, name):
    """tau_on - tau_off = round(round(F_c atan(k qd)) + F_o + F_v qd), atan by the CORDIC."""
    on = robot_case(robots, name, "on")
    if name == "ur5":  # also an offset
        on = replace(on, links=tuple(replace(link, friction=replace(link.friction, offset=0.25))
                                     for link in on.links))
    off = on.without_friction()
    q, qd, qdd = random_states(robots[name], 500)
    qd[:50] = np.linspace(-2e-4, 2e-4, 50)[:, None]  # the steep part of the atan
    difference = (rnea_fixed(on, q, qd, qdd).tau_words
                  - rnea_fixed(off, q, qd, qdd).tau_words)
    constants = encode_robot(on)
    rmap = microprogram().registers
    bits = {name: rmap[name].format.fraction_bits for name in ("qd", "k_friction", "k_qd", "tau")}
    qd_words = rmap.encode("qd", qd)
    for j, words in enumerate(constants):
        for s in range(len(q)):
            v = int(qd_words[s, j])
            k_qd = round_half_up(words["k_friction"] * v,
                                 bits["k_friction"] + bits["qd"] - bits["k_qd"])
            atan = int(CORDIC.atan(np.array([k_qd]))[0])
            coulomb = round_half_up(words["F_c"] * atan, 30)
            friction = round_half_up((coulomb + words["F_o"]) * 2 ** bits["qd"]
                                     + words["F_v"] * v, bits["qd"])
            assert difference[s, j] == friction, (s, j)
    friction_float = rnea(on, q, qd, qdd) - rnea(off, q, qd, qdd)
    assert np.max(np.abs(rmap.decode("tau", difference) - friction_float)) <= \
        BOUNDS[name]["on"]["joints"][0] + BOUNDS[name]["off"]["joints"][0]


@pytest.mark.parametrize("name", ROBOTS)
def test_external_wrench_on_last_and_middle_link_matches_float(robots, name):
    robot = robot_case(robots, name, "off")
    q, qd, qdd = random_states(robots[name], SAMPLE)
    f_ext = random_wrenches(robots[name], SAMPLE)
    middle = (robot.n - 1) // 2
    assert np.all(f_ext[:, robot.n - 1] != 0) and np.all(f_ext[:, middle] != 0)
    fixed = rnea_fixed(robot, q, qd, qdd, f_ext=f_ext)
    reference = rnea(robot, q, qd, qdd, f_ext=f_ext)
    assert np.max(np.abs(reference - rnea(robot, q, qd, qdd))) > 10  # the wrench matters
    error = np.max(np.abs(fixed.tau - reference), axis=0)
    assert np.all(error <= BOUNDS[name]["off"]["wrench"]), error


def test_wrench_on_the_middle_link_leaves_distal_torques_bit_identical(robots):
    robot = robot_case(robots, "panda", "off") if "panda" in robots else \
        robot_case(robots, "ur5", "off")
    q, qd, qdd = random_states(robot, 200)
    middle = (robot.n - 1) // 2
    f_ext = np.zeros((200, robot.n, 6))
    f_ext[:, middle] = random_wrenches(robot, 200)[:, robot.n - 1]
    plain = rnea_fixed(robot, q, qd, qdd)
    loaded = rnea_fixed(robot, q, qd, qdd, f_ext=f_ext)
    assert np.array_equal(loaded.tau_words[:, middle + 1:], plain.tau_words[:, middle + 1:])
    assert np.all(np.any(loaded.tau_words[:, :middle + 1] != plain.tau_words[:, :middle + 1],
                         axis=1))
    zero = rnea_fixed(robot, q, qd, qdd, f_ext=np.zeros((robot.n, 6)))
    assert np.array_equal(zero.tau_words, plain.tau_words)


# ----------------------------------------------------------------------------------------------
# Shapes, regressor, base wrench
# ----------------------------------------------------------------------------------------------

def test_batch_shapes_give_the_words_of_one_state_at_a_time(robots):
    robot = robot_case(robots, "puma560", "on")
    q, qd, qdd = (a.reshape(2, 3, robot.n) for a in random_states(robot, 6))
    f_ext = random_wrenches(robot, 6).reshape(2, 3, robot.n, 6)
    batch = rnea_fixed(robot, q, qd, qdd, f_ext=f_ext)
    assert batch.tau_words.shape == (2, 3, robot.n) and batch.tau.shape == (2, 3, robot.n)
    assert batch.overflow.shape == (2, 3, robot.n) and batch.base_wrench.shape == (2, 3, 6)
    flat = rnea_fixed(robot, q.reshape(6, -1), qd.reshape(6, -1), qdd.reshape(6, -1),
                      f_ext=f_ext.reshape(6, robot.n, 6))
    assert np.array_equal(flat.tau_words.reshape(2, 3, -1), batch.tau_words)
    for a in range(2):
        for b in range(3):
            one = rnea_fixed(robot, q[a, b], qd[a, b], qdd[a, b], f_ext=f_ext[a, b])
            assert one.tau_words.shape == (robot.n,) and one.base_wrench.shape == (6,)
            assert np.array_equal(one.tau_words, batch.tau_words[a, b])
            assert np.array_equal(one.base_wrench, batch.base_wrench[a, b])
            assert np.array_equal(one.overflow, batch.overflow[a, b])


def test_broadcasting_states_equals_explicit_states(robots):
    robot = robot_case(robots, "ur5", "off")
    q, qd, qdd = random_states(robot, 5)
    broadcast = rnea_fixed(robot, q, qd[0], qdd[:1])
    explicit = rnea_fixed(robot, q, np.tile(qd[0], (5, 1)), np.tile(qdd[0], (5, 1)))
    assert np.array_equal(broadcast.tau_words, explicit.tau_words)


def test_base_wrench_is_the_weight_at_rest_and_holds_tau_1(robots):
    robot = robot_case(robots, "ur5", "off")
    q, qd, qdd = random_states(robot, 200)
    # At rest the force on the base is the weight, along z of frame 0 (gravity along -z).
    still = rnea_fixed(robot, q, np.zeros_like(qd), np.zeros_like(qdd))
    weight = sum(link.mass for link in robot.links) * 9.80665
    assert np.max(np.abs(still.base_wrench[:, 2] - weight)) < 1e-3
    assert np.max(np.abs(still.base_wrench[:, :2])) < 1e-3
    # Without friction tau_1 is the z moment about the base, word for word.
    fixed = rnea_fixed(robot, q, qd, qdd)
    assert np.array_equal(microprogram().registers.encode("tau", fixed.base_wrench[:, 5]),
                          fixed.tau_words[:, 0])


def test_regressor_is_unaffected_by_the_golden_model(robots):
    robot = robot_case(robots, "ur10", "on")
    q, qd, qdd = random_states(robot, 300)
    before = regressor(robot, q, qd, qdd)
    parameters = robot.parameters().copy()
    fixed = rnea_fixed(robot, q, qd, qdd)
    after = regressor(robot, q, qd, qdd)
    assert np.array_equal(before, after)
    assert np.array_equal(robot.parameters(), parameters)
    assert np.allclose(after @ parameters, rnea(robot, q, qd, qdd), rtol=0, atol=1e-9)
    assert np.max(np.abs(after @ parameters - fixed.tau)) <= max(BOUNDS["ur10"]["on"]["joints"])


# ----------------------------------------------------------------------------------------------
# The error budget's float interpreter (linkdyn.model.accuracy)
# ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ROBOTS)
def test_float_interpreter_brackets_the_golden_model(robots, name):
    """No error source: the float model; every source: the golden model, word for word."""
    robot = robot_case(robots, name, "on")
    q, qd, qdd = random_states(robots[name], 300)
    assert np.max(np.abs(microprogram_float(robot, q, qd, qdd) - rnea(robot, q, qd, qdd))) \
        < 1e-9
    everything = microprogram_float(robot, q, qd, qdd, sources=ERROR_SOURCES)
    assert np.array_equal(microprogram().registers.encode("tau", everything),
                          rnea_fixed(robot, q, qd, qdd).tau_words)
    with pytest.raises(ValueError, match="unknown error sources"):
        microprogram_float(robot, q, qd, qdd, sources={"cosmic rays"})


def test_accuracy_command_writes_a_report(tmp_path):
    out = tmp_path / "accuracy.md"
    assert main(["--states", "40", "--robots", "puma560", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Fixed-point accuracy of the golden model")
    assert (f"Generated by `python -m linkdyn.model.accuracy --states 40 --robots puma560 "
            f"--out {out}`") in text
    assert "| Puma 560 | off |" in text and "| Puma 560 | on |" in text
    assert "| UR5 |" not in text
    assert "schedule_report(6)" in text and "| **node total** |" in text
    assert "## Error budget" in text
