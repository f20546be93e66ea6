"""The compiled joint controller against the interpreter of the same program, word for word.

:class:`FastJointController` (linkdyn.model.controller_compiled) runs Python functions generated
from ``PROGRAM``; the reference is :class:`JointControllerModel`, the numpy interpreter of the
op list. Both are stepped in lockstep over long random sequences (fixed seeds) on UR5 and Panda
joint configurations with random gains and limits, and after every segment every register,
every flag, the fault latch (code, cause mask, i_ref word, enable), the register-port reads and
the returned words must be equal. The sequences drive the words to saturation, move the joint
in and out of its range (guard limit switching), hit every fault cause, clear faults, change the
mode bits and write arbitrary words (negative limits included) into registers.
``LINKDYN_LONG=1`` runs every joint of both arms.
"""

import os

import numpy as np
import pytest

from linkdyn.model import load_robot
from linkdyn.model.controller import (FAULTS, FLAGS, MODE_BITS, PROGRAM, REGISTERS,
                                      ControllerConfig, JointControllerModel)
from linkdyn.model.controller_compiled import (FastJointController, fault_table,
                                               segment_source)
from linkdyn.model.reference import load_reference_robot

LONG = bool(os.environ.get("LINKDYN_LONG"))
STEPS = 5000
WORD_MIN, WORD_MAX = -(1 << 31), (1 << 31) - 1


def robot(name):
    return load_robot("ur5") if name == "ur5" else load_reference_robot("panda")


CASES = ([(name, j) for name in ("ur5", "panda") for j in range(6 if name == "ur5" else 7)]
         if LONG else [("ur5", 1), ("ur5", 4), ("panda", 0), ("panda", 3)])


def random_config(rng, limits):
    """A joint's configuration with random gains, fractions and counter limits."""
    kp = float(rng.uniform(10.0, 3000.0))
    return ControllerConfig.for_joint(
        limits, kp=kp, kd=float(rng.uniform(1.0, 2.0 * np.sqrt(kp))),
        guard_fraction=float(rng.uniform(0.0, 0.1)), margin=float(rng.uniform(0.02, 0.3)),
        current_per_torque=float(rng.uniform(0.001, 7.0)),
        tau_saturation_cycles=int(rng.integers(0, 40)), watchdog_cycles=int(rng.integers(0, 40)),
        measured_state=bool(rng.integers(2)), drive_enable=bool(rng.random() < 0.9),
        watchdog_reference=bool(rng.integers(2)), watchdog_message=bool(rng.integers(2)))


def state_of(model):
    return (dict(model.regs), dict(model.flags), dict(model.latch), model.mode,
            {name: model.read(name) for name in (*REGISTERS, "mode", "fault")},
            model.fault_code, model.fault_cause)


def assert_same(fast, slow, where):
    a, b = state_of(fast), state_of(slow)
    for part, x, y in zip(("regs", "flags", "latch", "mode", "read", "code", "cause"), a, b):
        if x != y:
            if isinstance(x, dict):
                diff = {k: (x[k], y[k]) for k in y if x.get(k) != y[k]}
                raise AssertionError(f"{where}: {part} differ (fast, interpreter): {diff}")
            raise AssertionError(f"{where}: {part} differ: {x!r} != {y!r}")
    for name, value in a[0].items():
        assert type(value) is int, f"{where}: register {name} is {type(value).__name__}"
    for name, value in a[1].items():
        assert type(value) is bool, f"{where}: flag {name} is {type(value).__name__}"


def input_word(rng, centre, span):
    """A Q15.16 word near ``centre`` (rad, ...), sometimes at or beyond the word range."""
    r = rng.random()
    if r < 0.03:
        return int(rng.choice([WORD_MIN, WORD_MAX, WORD_MIN + 1, WORD_MAX - 1, 0]))
    if r < 0.08:
        return int(rng.integers(WORD_MIN, WORD_MAX, endpoint=True))
    value = centre + span * rng.standard_normal()
    return int(np.clip(round(value * 65536), WORD_MIN, WORD_MAX))


REGIMES = ("wild", "calm", "saturating", "no_reference", "no_message")


def run_sequence(fast, slow, rng, limits, steps, words):
    """Step both models identically in blocks of random regimes; return the codes, causes seen.

    Regimes: ``wild`` (inputs anywhere, words at the range ends, random register writes),
    ``calm`` (inside the range), ``saturating`` (the model torque beyond the limit),
    ``no_reference`` / ``no_message`` (a strobe missing, its watchdog on). A block starts with a
    fault clear or a rewrite of the configuration at random.
    """
    centre = 0.5 * (limits.q_min + limits.q_max)
    half = 0.5 * (limits.q_max - limits.q_min)
    codes, causes = set(), 0
    parameters = [name for name, reg in REGISTERS.items() if reg.kind == "parameter"]
    regime = "calm"
    for step in range(steps):
        where = f"step {step} ({regime})"
        if step % 40 == 0:
            regime = str(rng.choice(REGIMES))
            if rng.random() < 0.3:
                for model in (fast, slow):
                    for name, word in words.items():
                        model.write(name, word)
            mode = words["mode"]
            if regime == "no_reference":
                mode |= 1 << MODE_BITS["watchdog_reference"][0]
            elif regime == "no_message":
                mode |= 1 << MODE_BITS["watchdog_message"][0]
            for model in (fast, slow):
                model.write("mode", mode)
            if rng.random() < 0.6:
                for model in (fast, slow):
                    model.clear()
                assert_same(fast, slow, where + " clear")
        wild = regime == "wild"
        r = rng.random()
        if r < 0.005:
            for model in (fast, slow):
                model.clear()
            assert_same(fast, slow, where + " clear")
        elif wild and r < 0.03:
            mode = int(rng.integers(0, 1 << len(MODE_BITS)))
            for model in (fast, slow):
                model.write("mode", mode)
        elif wild and r < 0.06:
            name = str(rng.choice(parameters))
            word = int(rng.integers(-(1 << 32), 1 << 32))
            if rng.random() < 0.5:   # a small word: near zero, negative limits included
                word = int(rng.integers(-(1 << 20), 1 << 20))
            for model in (fast, slow):
                model.write(name, word)
        reference = regime != "no_reference" and bool(rng.random() < (0.8 if wild else 1.0))
        message = regime != "no_message" and bool(rng.random() < (0.8 if wild else 1.0))
        for model in (fast, slow):
            model.strobe(reference=reference, message=message)
        if wild:
            q, q_ref = input_word(rng, centre, 1.2 * half), input_word(rng, centre, 1.2 * half)
            qd = input_word(rng, 0.0, 1.2 * limits.qd_max)
            qd_ref = input_word(rng, 0.0, limits.qd_max)
            qdd_ref = input_word(rng, 0.0, 50.0)
            tau = input_word(rng, 0.0, 0.7 * limits.tau_max)
        else:
            def inside(c, s):
                return int(round((c + s * rng.uniform(-1.0, 1.0)) * 65536))
            # Near the range's ends now and then: the guard switches its limit.
            q = inside(centre, 1.05 * half)
            q_ref = inside(centre, 1.2 * half)
            qd = inside(0.0, 0.3 * limits.qd_max * (4.0 if rng.random() < 0.1 else 1.0))
            qd_ref = inside(0.0, 0.3 * limits.qd_max)
            qdd_ref = inside(0.0, 5.0)
            if regime == "saturating":   # beyond the torque limit, either sign
                q = inside(centre, 0.9 * half)
                tau = int(round(float(rng.choice([-1.0, 1.0])) * rng.uniform(1.1, 3.0)
                                * limits.tau_max * 65536))
            else:
                tau = inside(0.0, 0.3 * limits.tau_max)
        words_in = (q, qd, q_ref, qd_ref, qdd_ref)
        assert fast.feedback(*words_in) == slow.feedback(*words_in), where
        assert_same(fast, slow, where + " feedback")
        assert fast.output(tau) == slow.output(tau), where
        assert_same(fast, slow, where + " output")
        codes.add(slow.fault_code)
        causes |= slow.fault_cause
    return codes, causes


@pytest.mark.parametrize("robot_name, joint", CASES)
def test_fast_controller_equals_interpreter(robot_name, joint):
    rng = np.random.default_rng(1000 + 17 * joint + (0 if robot_name == "ur5" else 500))
    limits = robot(robot_name).links[joint].limits
    words = random_config(rng, limits).encode()
    fast, slow = FastJointController(words), JointControllerModel(words)
    assert_same(fast, slow, "start")
    codes, causes = run_sequence(fast, slow, rng, limits, STEPS, words)
    # The sequence reached every fault cause and cleared faults (else it tests less).
    assert codes == {0, *FAULTS}, codes
    assert causes == (1 << len(FAULTS)) - 1


def test_guard_switching_and_saturation_are_reached():
    """A sequence sees both guard limits, an active torque limit and saturated products."""
    rng = np.random.default_rng(7)
    limits = robot("ur5").links[2].limits
    words = random_config(rng, limits).encode()
    fast, slow = FastJointController(words), JointControllerModel(words)
    seen = {"in_range": set(), "tau_at_limit": set(), "run_ok": set()}
    saturated = 0
    for _ in range(40):
        run_sequence(fast, slow, rng, limits, 40, words)
        for name in seen:
            seen[name].add(fast.flags[name])
        saturated += fast.regs["fb_p_raw"] in (WORD_MIN, WORD_MAX)
    assert all(values == {False, True} for values in seen.values()), seen
    assert saturated > 0


def test_fault_table_is_the_interpreters():
    names, table = fault_table()
    assert set(names) == {"hard_pos_ok", "hard_vel_ok", "sat_ok", "ref_ok", "msg_ok",
                          "watchdog_reference", "watchdog_message"}
    assert len(table) == 2 ** len(names)
    ok = {name: True for name in names}
    assert table[tuple(ok[n] for n in names)] == (0, 0)
    # Position and velocity at once: both bits, the code of the first (FAULTS order).
    both = dict(ok, hard_pos_ok=False, hard_vel_ok=False)
    assert table[tuple(both[n] for n in names)] == (0b11, 1)
    # A watchdog counts only when its mode bit is set.
    late = dict(ok, ref_ok=False, watchdog_reference=False)
    assert table[tuple(late[n] for n in names)] == (0, 0)
    late["watchdog_reference"] = True
    assert table[tuple(late[n] for n in names)] == (0b1000, 4)


def test_segment_source_covers_every_op_and_rejects_unknown():
    for segment, ops in PROGRAM.items():
        source = segment_source(segment)
        for op in ops:
            if op.dst and op.kind not in ("clear_fault",):
                target = f"f_{op.dst}" if op.dst in FLAGS else f"r_{op.dst}"
                assert target + " =" in source, (segment, op)
    with pytest.raises(ValueError, match="segment must be one of"):
        segment_source("reset")


def test_interface_errors_as_interpreter():
    fast = FastJointController({})
    with pytest.raises(KeyError):
        fast.write("nonsense", 1)
    with pytest.raises(KeyError):
        fast.read("nonsense")
    fast.write("tau_max", -1)
    assert fast.read("tau_max") == 0xFFFFFFFF and fast.regs["tau_max"] == -1
