"""The one-state golden model (``GoldenChain``, compiled microprogram) equals ``rnea_fixed``.

The reference is the numpy interpreter :func:`linkdyn.model.golden.rnea_fixed`, run vectorised
on the whole sample; :class:`linkdyn.model.golden.GoldenChain` runs every state on its own. They
must agree word for word: ``tau`` words, every register of every node (constants, inputs,
mailboxes, scratch, table and CORDIC latches, outputs), the base wrench and the overflow flags.

Robots: UR5, UR10, Puma 560 (built in) and Panda (example-robot-data), each with friction (its
own or the typical friction of :data:`linkdyn.model.accuracy.TYPICAL_FRICTION`) and without.
States: 2,000 random states inside the joint limits (:func:`~linkdyn.model.accuracy.random_states`,
fixed seed), half of them with random external wrenches on the last and middle link; 200 states
with huge joint velocities and accelerations, where results saturate; the zero state.
"""

import numpy as np
import pytest

from linkdyn.model.accuracy import (ROBOTS, random_states, random_wrenches)
from linkdyn.model.compiled import compile_segment, compiled_microprogram
from linkdyn.model.fixedpoint import Q15_16, FixedPointRangeError, QFormat
from linkdyn.model.golden import GoldenChain, encode_robot, rnea_fixed
from linkdyn.model.microprogram import SEGMENTS, Dot, microprogram

from support.robots import robot_case

SAMPLE = 2_000
SATURATING = 200
SEED = 20261201




def assert_equal_word_for_word(robot, q, qd, qdd, f_ext=None, fmt=Q15_16):
    """Run the batch through rnea_fixed and every state through GoldenChain; compare all."""
    batch = rnea_fixed(robot, q, qd, qdd, fmt=fmt, f_ext=f_ext, keep_registers=True)
    chain = GoldenChain(robot, fmt)
    count = q.shape[0]
    results = [chain.step(q[k], qd[k], qdd[k], None if f_ext is None else f_ext[k],
                          keep_registers=True) for k in range(count)]
    tau_words = np.array([r.tau_words for r in results])
    assert tau_words.dtype == np.int64
    assert np.array_equal(tau_words, batch.tau_words)
    assert np.array_equal(np.array([r.tau for r in results]), batch.tau)
    assert np.array_equal(np.array([r.overflow for r in results]), batch.overflow)
    assert np.array_equal(np.array([r.base_wrench for r in results]), batch.base_wrench)
    for i, expected in enumerate(batch.registers):
        got = [r.registers[i] for r in results]
        assert all(set(g) == set(expected) for g in got), f"node {i + 1}: register names"
        for name, words in expected.items():
            fast = np.array([g[name] for g in got])
            assert fast.dtype == np.int64
            assert np.array_equal(fast, words), f"node {i + 1} register {name}"
    return batch


@pytest.mark.parametrize("name", ROBOTS)
@pytest.mark.parametrize("case", ("on", "off"))
def test_fast_path_equals_rnea_fixed_on_random_states(robots, name, case):
    robot = robot_case(robots, name, case)
    count = SAMPLE if case == "on" else SAMPLE // 10
    q, qd, qdd = random_states(robots[name], count)
    half = count // 2
    wrenches = random_wrenches(robots[name], half)
    assert np.abs(wrenches).max() > 1.0   # the wrench inputs are exercised
    assert_equal_word_for_word(robot, q[:half], qd[:half], qdd[:half], wrenches)
    batch = assert_equal_word_for_word(robot, q[half:], qd[half:], qdd[half:])
    assert not batch.overflow.any()       # inside the limits nothing saturates
    if case == "on":                      # the friction path (CORDIC) is exercised
        assert np.any(batch.registers[0]["tau_friction"] != 0)
    # Joint angles beyond half a turn make the phase word wrap (UR arms: +-2 pi).
    if name in ("ur5", "ur10"):
        assert np.any(np.abs(q) > np.pi)


@pytest.mark.parametrize("name", ROBOTS)
def test_fast_path_equals_rnea_fixed_where_results_saturate(robots, name):
    robot = robot_case(robots, name, "on")
    rng = np.random.default_rng([SEED, len(name)])
    q, qd, qdd = random_states(robots[name], SATURATING, seed=SEED)
    # One joint per state turns at 10 .. 30,000 rad/s (log-uniform), in either direction.
    joint = rng.integers(0, robot.n, SATURATING)
    qd[np.arange(SATURATING), joint] = (rng.choice([-1.0, 1.0], SATURATING)
                                        * 10.0 ** rng.uniform(1.0, np.log10(30_000.0),
                                                              SATURATING))
    f_ext = rng.uniform(-100.0, 100.0, (SATURATING, robot.n, 6))
    batch = assert_equal_word_for_word(robot, q, qd, qdd, f_ext)
    # The test must see both flags, and saturated words, to mean anything.
    assert batch.overflow.any() and not batch.overflow.all()
    assert np.any(np.abs(batch.tau_words) == 2 ** 31 - 1) or np.any(batch.tau_words == -2 ** 31)


def test_fast_path_equals_rnea_fixed_in_another_word_format(robots):
    robot = robot_case(robots, "ur5", "on")
    fmt = QFormat(11, 20)
    q, qd, qdd = random_states(robot, 200)
    batch = assert_equal_word_for_word(robot, q, qd, qdd, fmt=fmt)
    assert not np.array_equal(batch.tau_words, rnea_fixed(robot, q, qd, qdd).tau_words)


def test_fast_path_equals_rnea_fixed_at_the_zero_state(robots):
    robot = robot_case(robots, "ur5", "on")
    zero = np.zeros((1, robot.n))
    batch = assert_equal_word_for_word(robot, zero, zero, zero)
    assert np.any(batch.tau_words != 0)   # gravity


def test_rnea_fixed_with_pre_encoded_constants_is_unchanged(robots):
    robot = robot_case(robots, "ur10", "on")
    q, qd, qdd = random_states(robot, 50)
    constants = encode_robot(robot)
    plain = rnea_fixed(robot, q, qd, qdd, keep_registers=True)
    cached = rnea_fixed(robot, q, qd, qdd, keep_registers=True, constants=constants)
    assert np.array_equal(plain.tau_words, cached.tau_words)
    assert np.array_equal(plain.overflow, cached.overflow)
    for a, b in zip(plain.registers, cached.registers):
        assert all(np.array_equal(a[key], b[key]) for key in a)
    # Constants of another robot give other torques: the argument is used.
    other = rnea_fixed(robot, q, qd, qdd, constants=encode_robot(robot.without_friction()))
    assert not np.array_equal(other.tau_words, plain.tau_words)
    assert GoldenChain(robot).constants == constants


def test_rnea_fixed_refuses_constants_that_are_not_encode_robot(robots):
    robot = robot_case(robots, "ur5", "off")
    constants = encode_robot(robot)
    zero = np.zeros(robot.n)
    with pytest.raises(ValueError, match="constants must be encode_robot"):
        rnea_fixed(robot, zero, zero, zero, constants=constants[:-1])
    broken = [dict(words) for words in constants]
    del broken[2]["m"]
    with pytest.raises(ValueError, match="constants must be encode_robot"):
        rnea_fixed(robot, zero, zero, zero, constants=broken)


def test_golden_chain_refuses_bad_input_as_rnea_fixed_does(robots):
    robot = robot_case(robots, "ur5", "off")
    chain = GoldenChain(robot)
    zero = np.zeros(robot.n)
    q = zero.copy()
    q[3] = 40_000.0
    with pytest.raises(FixedPointRangeError) as fast:
        chain.step(q, zero, zero)
    with pytest.raises(FixedPointRangeError) as slow:
        rnea_fixed(robot, q, zero, zero)
    assert str(fast.value) == str(slow.value) and "node 4 q" in str(fast.value)
    wrench = np.zeros((robot.n, 6))
    wrench[5, 4] = np.inf
    with pytest.raises(FixedPointRangeError) as fast:
        chain.step(zero, zero, zero, wrench)
    with pytest.raises(FixedPointRangeError) as slow:
        rnea_fixed(robot, zero, zero, zero, f_ext=wrench)
    assert str(fast.value) == str(slow.value) and "node 6 mu_ext_y" in str(fast.value)
    with pytest.raises(ValueError, match=r"qd must have shape \(6,\)"):
        chain.step(zero, np.zeros(5), zero)
    with pytest.raises(ValueError, match=r"f_ext must have shape \(6, 6\)"):
        chain.step(zero, zero, zero, np.zeros((6, 3)))
    with pytest.raises(TypeError, match="robot must be a Robot"):
        GoldenChain("ur5")
    with pytest.raises(TypeError, match="fmt must be NodeFormats or a QFormat"):
        GoldenChain(robot, fmt="Q15.16")


def test_compiled_segments_follow_the_microprogram():
    program = microprogram(Q15_16)
    compiled = compiled_microprogram(Q15_16)
    assert tuple(compiled) == SEGMENTS
    for name in SEGMENTS:
        ops = program.segments[name].ops
        segment = compiled[name]
        # Every Dot appears once in the generated source, in program order.
        source = "".join(segment.sources)
        positions = [source.index(f"r_{op.dst} = round_shift(") for op in ops
                     if isinstance(op, Dot)]
        assert positions == sorted(positions)
        assert sum(1 for op in ops if isinstance(op, Dot)) == source.count("round_shift(")
        # Table and CORDIC ops stay the microprogram's own ops, in place.
        assert [s for s in segment.steps if not callable(s)] == \
            [op for op in ops if not isinstance(op, Dot)]
    assert compiled["joint"].lockstep and not compiled["forward"].lockstep
    with pytest.raises(ValueError, match="reads other nodes' words"):
        compiled["forward"].run([{}, {}])
    with pytest.raises(ValueError, match="segment must be one of"):
        compile_segment("backward")


def test_golden_chain_with_a_moving_base_equals_rnea_fixed(robots):
    robot = robot_case(robots, "puma560", "on")
    q, qd, qdd = random_states(robot, 100)
    base_motion = ([0.3, -0.2, 0.5], [1.0, 2.0, -0.5], [0.5, -1.0, 9.0])
    batch = rnea_fixed(robot, q, qd, qdd, base_motion=base_motion)
    chain = GoldenChain(robot, base_motion=base_motion)
    fixed_base = GoldenChain(robot)
    tau_words = np.array([chain.step(q[k], qd[k], qdd[k]).tau_words for k in range(100)])
    assert np.array_equal(tau_words, batch.tau_words)
    assert not np.array_equal(
        tau_words, [fixed_base.step(q[k], qd[k], qdd[k]).tau_words for k in range(100)])
