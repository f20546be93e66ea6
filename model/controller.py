"""The joint controller of a LinkDyn node: registers and fixed-point program (one definition).

The source paper (Sect. 3.1 "Actuator Controllers", Fig. 7) puts, beside each node's dynamics
model, a joint-level control loop: a *state MUX* chooses the model's input (reference or measured
state), a computed-torque *feedback* ``qdd_cmd = qdd_ref + sat(Kp (q_ref - q)) + sat(Kd (qd_ref -
qd))`` (each term limited individually) is the model's acceleration, the model's torque is the
feed-forward, a *guard cascade* of high-gain position / velocity (+ integral) controllers adds a
torque limited to a small fraction of the nominal torque while the joint is inside its range and
a large one that pushes it back outside, the sum is *limited* to the permissible torque and
converted to the *current reference* of the motor's current controller, and a *safety shut-off*
latches a fault, with its cause, beyond maximum thresholds.

This module is the one definition of that arithmetic. The controller's work is a list of
fixed-point operations over named registers (:class:`Op`), in two *segments* run per control
step:

``feedback``
    runs when a new sensor sample and reference are taken: the state MUX and ``qdd_cmd``, the
    model's inputs (to the node);
``output``
    runs when the node's torque ``tau_model`` is there: guard, torque limit, current, shut-off.
``clear``
    runs on a fault clear: the shut-off's counters and the fault latch to zero.

The first two run once per control step. The golden model (:func:`run_segment`,
:class:`JointControllerModel`) interprets the list with the arithmetic below; the gateware
(:mod:`linkdyn.gateware.controller`) executes the same list,
one operation at a time on one ALU and one multiplier, so both agree bit for bit.

Operations (every register is a signed 32-bit word; ``L = max(b, 0)``)::

    copy    dst = a
    add     dst = saturate(a + b)                       same format
    sub     dst = saturate(a - b)                       same format
    mul     dst = saturate(round_half_up(a b / 2**s))   s = f_a + f_b - f_dst
    clamp   dst = min(max(a, -L), L);  flag = (|a| > L) (the limit is active)
    max     dst = max(a, b);   min   dst = min(a, b)
    select  dst = a if flag else b
    ge      flag = a >= b;     le    flag = a <= b
    within  flag = -L <= a <= L
    and     flag = flag_a and flag_b          (a flag name with a leading "~" is negated)
    count   dst = saturate(a + b) if flag else 0    (a = "one": a step counter)
    safety  latch the step's fault causes (:func:`fault_causes`), drive the current reference
            ``i_ref = a`` and ``enable`` if ``run_ok`` (no fault, drive enabled), else 0 and low;
            clear the strobe flags
    clear_fault   clear the fault latch (segment ``clear``, run by a fault clear)

A negative limit word acts as zero (``L = max(b, 0)``): whatever the register holds, a clamped
result is within ``[-|L|, |L|]``. The encoder (:meth:`ControllerConfig.encode`) refuses negative
limits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .fixedpoint import FixedPointRangeError, Q15_16, QFormat, round_shift, saturate

__all__ = [
    "WORD", "FINE", "COUNT", "COUNT_MAX", "Register", "REGISTERS", "SPECIAL_REGISTERS", "INPUTS",
    "OUTPUT_PORTS", "FLAGS", "STROBE_FLAGS", "MODE_BITS", "FAULTS", "FAULT_CODE_BITS",
    "FAULT_CAUSE_SHIFT", "fault_word", "decode_fault", "Op", "PROGRAM", "SEGMENTS",
    "ControllerConfig", "register", "mul_shift", "run_segment", "fault_causes",
    "register_table", "program_listing",
    "JointControllerModel", "FixedPointRangeError",
]

#: The controller's word format for positions, velocities, accelerations, torques, currents,
#: gains: Q15.16, the node's word (DESIGN contract: one word format).
WORD = Q15_16
#: The fine format for small constants (the current per torque, the per-step integral gain):
#: Q3.28, |value| < 8.
FINE = QFormat(3, 28, "Q3.28")
#: Counts of control steps (the shut-off's counters and their limits): integers, Q31.0; the
#: counters saturate at ``2**31 - 1``.
COUNT = QFormat(31, 0, "Q31.0")
COUNT_MAX = COUNT.max_word


@dataclass(frozen=True)
class Register:
    """One register of the joint controller.

    Attributes
    ----------
    name : str
        Register name.
    address : int or None
        Address on the controller's register port; ``None`` for inputs (ports, not registers).
    kind : str
        ``"parameter"`` (written by the host), ``"state"`` (kept from step to step),
        ``"scratch"`` (an intermediate of a step, readable), ``"output"`` (also driven on a
        port), ``"input"`` (a port captured at the start of a segment), ``"special"`` (mode,
        counter limits, fault: not words of the register file).
    format : QFormat or None
        Number format of a word register; ``None`` for special registers.
    unit : str
        SI unit of the value.
    doc : str
        What it is.
    limit : bool
        A limit (magnitude or bound): the encoder refuses negative values where ``nonnegative``.
    nonnegative : bool
        The value must be ``>= 0`` (magnitudes: limits, ``qd_max``, gains).
    """

    name: str
    address: int | None
    kind: str
    format: QFormat | None
    unit: str
    doc: str
    nonnegative: bool = False


def _define():
    registers = {}
    address = 0

    def reg(kind, name, fmt, unit, doc, nonnegative=False):
        nonlocal address
        registers[name] = Register(name, address, kind, fmt, unit, doc, nonnegative)
        address += 1

    # Parameters (host writes, SI through ControllerConfig.encode).
    reg("parameter", "kp", WORD, "1/s^2", "position gain of the computed-torque feedback", True)
    reg("parameter", "kd", WORD, "1/s", "velocity gain of the computed-torque feedback", True)
    reg("parameter", "lim_p", WORD, "rad/s^2", "limit of the position feedback term", True)
    reg("parameter", "lim_d", WORD, "rad/s^2", "limit of the velocity feedback term", True)
    reg("parameter", "guard_kp", WORD, "1/s",
        "guard position gain: velocity reference per position error", True)
    reg("parameter", "guard_kv", WORD, "N m s/rad", "guard velocity gain", True)
    reg("parameter", "guard_ki", FINE, "N m s/rad",
        "guard integral gain per control step (K_i T_step)", True)
    reg("parameter", "guard_small", WORD, "N m",
        "guard torque limit inside the range (default 4 % of the nominal torque)", True)
    reg("parameter", "guard_large", WORD, "N m",
        "guard torque limit outside the range (pushes the joint back)", True)
    reg("parameter", "q_min", WORD, "rad", "lower end of the position range")
    reg("parameter", "q_max", WORD, "rad", "upper end of the position range")
    reg("parameter", "qd_max", WORD, "rad/s", "velocity limit of the range", True)
    reg("parameter", "q_hard_min", WORD, "rad", "shut-off below this position")
    reg("parameter", "q_hard_max", WORD, "rad", "shut-off above this position")
    reg("parameter", "qd_hard_max", WORD, "rad/s", "shut-off above this speed", True)
    reg("parameter", "tau_max", WORD, "N m", "permissible torque magnitude", True)
    reg("parameter", "current_per_torque", FINE, "A/(N m)",
        "1 / (k_t N): motor current per joint torque (torque constant k_t, gear ratio N)")
    reg("parameter", "tau_saturation_cycles", COUNT, "control steps",
        "fault when the torque limit is active for more consecutive steps", True)
    reg("parameter", "watchdog_cycles", COUNT, "control steps",
        "fault when no reference / neighbour message came for more steps", True)
    # State kept from step to step.
    reg("state", "integrator", WORD, "N m", "guard integral term (anti-windup: within the "
        "active guard limit; zero while off or faulted)")
    reg("state", "sat_count", COUNT, "control steps",
        "consecutive steps with the torque limit active")
    reg("state", "ref_age", COUNT, "control steps", "steps without a reference strobe")
    reg("state", "msg_age", COUNT, "control steps", "steps without a neighbour-message strobe")
    # Samples of the inputs that are read as a second operand.
    reg("scratch", "q_s", WORD, "rad", "sampled joint position")
    reg("scratch", "qd_s", WORD, "rad/s", "sampled joint velocity")
    reg("scratch", "q_ref_s", WORD, "rad", "sampled reference position")
    reg("scratch", "qd_ref_s", WORD, "rad/s", "sampled reference velocity")
    # Feedback segment.
    reg("output", "q_model", WORD, "rad", "model input position (state MUX)")
    reg("output", "qd_model", WORD, "rad/s", "model input velocity (state MUX)")
    reg("scratch", "e_p", WORD, "rad", "q_ref - q")
    reg("scratch", "e_d", WORD, "rad/s", "qd_ref - qd")
    reg("scratch", "fb_p_raw", WORD, "rad/s^2", "Kp (q_ref - q)")
    reg("scratch", "fb_p", WORD, "rad/s^2", "position feedback term, within +-lim_p")
    reg("scratch", "fb_d_raw", WORD, "rad/s^2", "Kd (qd_ref - qd)")
    reg("scratch", "fb_d", WORD, "rad/s^2", "velocity feedback term, within +-lim_d")
    reg("scratch", "qdd_sum", WORD, "rad/s^2", "qdd_ref + fb_p")
    reg("output", "qdd_cmd", WORD, "rad/s^2", "model input acceleration")
    # Output segment: guard cascade.
    reg("scratch", "lim_g", WORD, "N m", "active guard limit (small in range, large outside)")
    reg("scratch", "q_g0", WORD, "rad", "max(q_ref, q_min)")
    reg("scratch", "q_guard_ref", WORD, "rad", "guard position reference, q_ref clamped "
        "into [q_min, q_max]")
    reg("scratch", "e_gp", WORD, "rad", "guard position error")
    reg("scratch", "v_g0", WORD, "rad/s", "guard_kp e_gp")
    reg("scratch", "v_g1", WORD, "rad/s", "guard_kp e_gp + qd_ref")
    reg("scratch", "qd_guard_ref", WORD, "rad/s", "guard velocity reference, within +-qd_max")
    reg("scratch", "e_gv", WORD, "rad/s", "guard velocity error")
    reg("scratch", "t_gp", WORD, "N m", "guard_kv e_gv")
    reg("scratch", "t_gi", WORD, "N m", "guard_ki e_gv (integral increment)")
    reg("scratch", "integ_raw", WORD, "N m", "integrator + t_gi")
    reg("scratch", "integ_lim", WORD, "N m", "integral within the active guard limit")
    reg("scratch", "t_g_raw", WORD, "N m", "t_gp + integ_lim")
    reg("output", "tau_guard", WORD, "N m", "guard torque, within the active guard limit")
    reg("scratch", "tau_sum", WORD, "N m", "tau_model + tau_guard")
    reg("output", "tau_cmd", WORD, "N m", "commanded torque, within +-tau_max")
    reg("scratch", "i_ref_raw", WORD, "A", "tau_cmd current_per_torque, before the shut-off")
    word_count = address
    # Special registers, above the register-file words.
    special = {}
    for offset, (name, unit, doc) in enumerate((
            ("mode", "", "mode bits (MODE_BITS)"),
            ("fault", "", "read: bits 0-2 fault code (first cause), bits 8-12 cause mask "
                          "(FAULTS); writes are ignored, clear with fault_clear"),
    )):
        special[name] = Register(name, 64 + offset, "special", None, unit, doc)
    inputs = {}
    for index, (name, unit, doc) in enumerate((
            ("q", "rad", "measured joint position (sensor)"),
            ("qd", "rad/s", "measured joint velocity (sensor)"),
            ("q_ref", "rad", "reference position"),
            ("qd_ref", "rad/s", "reference velocity"),
            ("qdd_ref", "rad/s^2", "reference acceleration"),
            ("tau_model", "N m", "the model's torque incl. friction (node output, eqs. 7, 20)"),
            ("zero", "", "constant 0"),
            ("one", "", "constant 1 (one LSB: counts)"),
    )):
        inputs[name] = Register(name, None, "input", COUNT if name == "one" else WORD, unit,
                                doc)
    return registers, word_count, special, inputs


_REGS, WORD_COUNT, SPECIAL_REGISTERS, INPUTS = _define()
#: Register-file words by name (parameters, state, scratch, outputs), address order.
REGISTERS = _REGS
#: Registers also driven on an output port of the gateware.
OUTPUT_PORTS = tuple(name for name, reg in REGISTERS.items() if reg.kind == "output")
#: Register-file depth of the gateware (the next power of two above the words).
REGISTER_FILE_DEPTH = 1 << math.ceil(math.log2(WORD_COUNT))
assert REGISTER_FILE_DEPTH <= 64, "register words must stay below the special registers at 64"

#: Bits of the ``mode`` register.
MODE_BITS = {
    "measured_state": (0, "state MUX: 1 the model gets the measured q, qd; 0 the reference"),
    "drive_enable": (1, "the current controller may run (enable out); 0: zero current"),
    "watchdog_reference": (2, "fault when no reference strobe for watchdog_cycles steps"),
    "watchdog_message": (3, "fault when no neighbour-message strobe for watchdog_cycles steps"),
}

#: Fault codes, in priority order (the first cause of a step is the latched code); the cause
#: mask bit of code ``c`` is ``c - 1``.
FAULTS = {
    1: ("position", "q beyond [q_hard_min, q_hard_max]"),
    2: ("velocity", "|qd| beyond qd_hard_max"),
    3: ("torque_saturation", "torque limit active (|tau_model + tau_guard| > tau_max) for more "
                             "than tau_saturation_cycles consecutive steps"),
    4: ("reference_watchdog", "no reference strobe for more than watchdog_cycles steps"),
    5: ("message_watchdog", "no neighbour-message strobe for more than watchdog_cycles steps"),
}

#: The ``fault`` word (register ``fault``, 0x41): bits 0 .. FAULT_CODE_BITS-1 the code of the
#: first fault since the last clear, bits FAULT_CAUSE_SHIFT .. + len(FAULTS)-1 the mask of every
#: cause seen (bit ``code - 1``).
FAULT_CODE_BITS = 3
FAULT_CAUSE_SHIFT = 8


def fault_word(code, cause):
    """Return the ``fault`` word of a code and a cause mask (see :data:`FAULT_CODE_BITS`)."""
    return int(code) | (int(cause) << FAULT_CAUSE_SHIFT)


def decode_fault(word):
    """Split a ``fault`` word into its code and cause mask.

    Parameters
    ----------
    word : int or array_like of int
        The ``fault`` word (register ``fault`` or the step record's ``record_fault``).

    Returns
    -------
    code, cause : int or numpy.ndarray of int64
        The code (0: no fault, else a key of :data:`FAULTS`) and the cause mask, shaped like
        ``word``.
    """
    word = np.asarray(word, dtype=np.int64)
    code = word & ((1 << FAULT_CODE_BITS) - 1)
    cause = (word >> FAULT_CAUSE_SHIFT) & ((1 << len(FAULTS)) - 1)
    if code.ndim == 0:
        return int(code), int(cause)
    return code, cause


#: One-bit flags: the mode bits, the flags ops write, and the strobes' "seen" bits.
FLAGS = (*MODE_BITS, "ref_seen", "msg_seen", "pos_lo_ok", "pos_hi_ok", "vel_ok", "in_pos",
         "in_range", "tau_at_limit", "hard_lo_ok", "hard_hi_ok", "hard_pos_ok", "hard_vel_ok",
         "sat_ok", "ref_ok", "msg_ok", "run_ok")
#: Flags set by the strobe inputs (and cleared by the ``safety`` operation).
STROBE_FLAGS = ("ref_seen", "msg_seen")

#: Operation kinds and what they write (a word ``"word"`` or a flag ``"flag"``).
OP_KINDS = {"copy": "word", "add": "word", "sub": "word", "mul": "word", "clamp": "word",
            "max": "word", "min": "word", "select": "word", "ge": "flag", "le": "flag",
            "within": "flag", "and": "flag", "count": "word", "safety": "flag",
            "clear_fault": "flag"}


@dataclass(frozen=True)
class Op:
    """One operation of the controller program (see the module docstring).

    Attributes
    ----------
    kind : str
        One of :data:`OP_KINDS`.
    dst : str
        Destination register (word ops) or flag (flag ops).
    a, b : str
        Operands: registers, inputs, or for ``and`` flags (``"~name"`` negates).
    flag : str
        ``select``: the condition; ``clamp``: the flag set when the limit is active (optional).
    """

    kind: str
    dst: str
    a: str = "zero"
    b: str = ""
    flag: str = ""

    def __post_init__(self):
        if self.kind not in OP_KINDS:
            raise ValueError(f"operation kind must be one of {sorted(OP_KINDS)}, not "
                             f"{self.kind!r}")


def _program():
    o = Op
    feedback = (
        o("copy", "q_s", "q"),
        o("copy", "qd_s", "qd"),
        o("copy", "q_ref_s", "q_ref"),
        o("copy", "qd_ref_s", "qd_ref"),
        # State MUX (Fig. 7): the model's q, qd are the measured or the reference state.
        o("select", "q_model", "q", "q_ref_s", flag="measured_state"),
        o("select", "qd_model", "qd", "qd_ref_s", flag="measured_state"),
        # Computed-torque feedback, each term limited individually.
        o("sub", "e_p", "q_ref", "q_s"),
        o("sub", "e_d", "qd_ref", "qd_s"),
        o("mul", "fb_p_raw", "e_p", "kp"),
        o("clamp", "fb_p", "fb_p_raw", "lim_p"),
        o("mul", "fb_d_raw", "e_d", "kd"),
        o("clamp", "fb_d", "fb_d_raw", "lim_d"),
        o("add", "qdd_sum", "qdd_ref", "fb_p"),
        o("add", "qdd_cmd", "qdd_sum", "fb_d"),
    )
    output = (
        # Range check: the guard's small limit holds inside, the large one outside.
        o("ge", "pos_lo_ok", "q", "q_min"),
        o("le", "pos_hi_ok", "q", "q_max"),
        o("within", "vel_ok", "qd", "qd_max"),
        o("and", "in_pos", "pos_lo_ok", "pos_hi_ok"),
        o("and", "in_range", "in_pos", "vel_ok"),
        o("select", "lim_g", "guard_small", "guard_large", flag="in_range"),
        # Guard cascade: position -> velocity reference, its reference clamped into the range.
        o("max", "q_g0", "q_ref", "q_min"),
        o("min", "q_guard_ref", "q_g0", "q_max"),
        o("sub", "e_gp", "q_guard_ref", "q_s"),
        o("mul", "v_g0", "e_gp", "guard_kp"),
        o("add", "v_g1", "qd_ref", "v_g0"),
        o("clamp", "qd_guard_ref", "v_g1", "qd_max"),
        # Velocity PI; the integral stays within the active limit (anti-windup).
        o("sub", "e_gv", "qd_guard_ref", "qd_s"),
        o("mul", "t_gp", "e_gv", "guard_kv"),
        o("mul", "t_gi", "e_gv", "guard_ki"),
        o("add", "integ_raw", "integrator", "t_gi"),
        o("clamp", "integ_lim", "integ_raw", "lim_g"),
        o("add", "t_g_raw", "t_gp", "integ_lim"),
        o("clamp", "tau_guard", "t_g_raw", "lim_g"),
        # Torque limit and current reference.
        o("add", "tau_sum", "tau_model", "tau_guard"),
        o("clamp", "tau_cmd", "tau_sum", "tau_max", flag="tau_at_limit"),
        o("mul", "i_ref_raw", "tau_cmd", "current_per_torque"),
        # Safety shut-off.
        o("ge", "hard_lo_ok", "q", "q_hard_min"),
        o("le", "hard_hi_ok", "q", "q_hard_max"),
        o("and", "hard_pos_ok", "hard_lo_ok", "hard_hi_ok"),
        o("within", "hard_vel_ok", "qd", "qd_hard_max"),
        o("count", "sat_count", "one", "sat_count", flag="tau_at_limit"),
        o("le", "sat_ok", "sat_count", "tau_saturation_cycles"),
        o("count", "ref_age", "one", "ref_age", flag="~ref_seen"),
        o("le", "ref_ok", "ref_age", "watchdog_cycles"),
        o("count", "msg_age", "one", "msg_age", flag="~msg_seen"),
        o("le", "msg_ok", "msg_age", "watchdog_cycles"),
        o("safety", "run_ok", "i_ref_raw"),
        # The integral runs only while the drive does.
        o("select", "integrator", "zero", "integ_lim", flag="~run_ok"),
    )
    clear = (
        o("copy", "sat_count", "zero"),
        o("copy", "ref_age", "zero"),
        o("copy", "msg_age", "zero"),
        o("clear_fault", ""),
    )
    return {"feedback": feedback, "output": output, "clear": clear}


#: Segment names (``clear`` runs on a fault clear).
SEGMENTS = ("feedback", "output", "clear")
#: The program: segment name -> tuple of Op.
PROGRAM = _program()


def register(name):
    """Return the :class:`Register` (word, input or special) called ``name``.

    Raises
    ------
    KeyError
        If there is none.
    """
    for table in (REGISTERS, INPUTS, SPECIAL_REGISTERS):
        if name in table:
            return table[name]
    raise KeyError(f"no controller register named {name!r}")


def mul_shift(op):
    """Return the final right shift of a ``mul`` operation, ``f_a + f_b - f_dst`` bits.

    Raises
    ------
    ValueError
        If the shift would be negative.
    """
    shift = (register(op.a).format.fraction_bits + register(op.b).format.fraction_bits
             - register(op.dst).format.fraction_bits)
    if shift < 1:
        raise ValueError(f"mul into {op.dst!r} needs a shift >= 1, not {shift}")
    return shift


def _check_program():
    words = set(REGISTERS) | set(INPUTS)
    for segment, ops in PROGRAM.items():
        for op in ops:
            kind = OP_KINDS[op.kind] if op.kind != "clear_fault" else ""
            if kind == "word" and op.dst not in REGISTERS:
                raise ValueError(f"{segment}: {op.kind} writes unknown register {op.dst!r}")
            if kind == "flag" and op.dst not in FLAGS:
                raise ValueError(f"{segment}: {op.kind} writes unknown flag {op.dst!r}")
            operands = {"safety": (op.a,), "copy": (op.a,), "clear_fault": ()}.get(
                op.kind, (op.a, op.b))
            for operand in operands:
                table = FLAGS if op.kind == "and" else words
                if operand.lstrip("~") not in table:
                    raise ValueError(f"{segment}: {op.kind} reads unknown {operand!r}")
            if op.kind not in ("and",) and op.b and op.b in INPUTS:
                raise ValueError(f"{segment}: {op.kind} reads input {op.b!r} as its second "
                                 "operand (only the first may be an input)")
            if op.flag and op.flag.lstrip("~") not in FLAGS:
                raise ValueError(f"{segment}: unknown flag {op.flag!r}")
            if op.kind == "mul":
                mul_shift(op)
            elif op.kind in ("add", "sub", "clamp", "max", "min", "select", "ge", "le",
                             "within", "count"):
                fa, fb = register(op.a).format, register(op.b).format
                if op.a != "zero" and fa.fraction_bits != fb.fraction_bits:
                    raise ValueError(f"{segment}: {op.kind} {op.a} / {op.b} mixes formats")


_check_program()


# -- SI configuration and its encoder -------------------------------------------------------

@dataclass(frozen=True)
class ControllerConfig:
    """Configuration of one joint controller in SI units (encoded by :meth:`encode`).

    Every word parameter of :data:`REGISTERS` is a field of the same name (units there), plus
    the mode bits and the two counter limits.

    Parameters
    ----------
    kp, kd : float
        Computed-torque feedback gains, 1/s^2 and 1/s.
    lim_p, lim_d : float
        Limits of the two feedback terms, rad/s^2.
    guard_kp, guard_kv, guard_ki : float
        Guard cascade gains: 1/s, N·m·s/rad, and the integral gain per control step
        ``K_i T_step`` in N·m·s/rad (the integral adds ``guard_ki * e_gv`` every step).
    guard_small, guard_large : float
        Guard torque limits inside and outside the range, N·m.
    q_min, q_max, qd_max : float
        The range the small guard limit holds in: rad, rad, rad/s.
    q_hard_min, q_hard_max, qd_hard_max : float
        Shut-off thresholds, rad, rad, rad/s.
    tau_max : float
        Permissible torque magnitude, N·m.
    current_per_torque : float
        ``1 / (k_t N)``, A/(N·m).
    tau_saturation_cycles, watchdog_cycles : int
        Counter limits in control steps (``0 <= x < 2**31``).
    measured_state, drive_enable, watchdog_reference, watchdog_message : bool
        Mode bits (:data:`MODE_BITS`).
    """

    kp: float = 0.0
    kd: float = 0.0
    lim_p: float = 0.0
    lim_d: float = 0.0
    guard_kp: float = 0.0
    guard_kv: float = 0.0
    guard_ki: float = 0.0
    guard_small: float = 0.0
    guard_large: float = 0.0
    q_min: float = 0.0
    q_max: float = 0.0
    qd_max: float = 0.0
    q_hard_min: float = 0.0
    q_hard_max: float = 0.0
    qd_hard_max: float = 0.0
    tau_max: float = 0.0
    current_per_torque: float = 0.0
    tau_saturation_cycles: int = COUNT_MAX
    watchdog_cycles: int = COUNT_MAX
    measured_state: bool = False
    drive_enable: bool = True
    watchdog_reference: bool = False
    watchdog_message: bool = False

    @classmethod
    def for_joint(cls, limits, *, kp=400.0, kd=40.0, guard_fraction=0.04, margin=0.1,
                  current_per_torque=0.1, **kwargs):
        """Return a configuration from a joint's limits (:class:`~linkdyn.model.robot.JointLimits`).

        The nominal torque is the joint's effort limit ``tau_max``; the guard's small limit is
        ``guard_fraction`` of it (default 4 %, the paper says 3-5 %), its large limit half of it.
        The range is the joint's position / velocity limits; the hard limits lie ``margin``
        (relative) beyond them. The feedback limits are ``kp`` times a 0.1 rad error and ``kd``
        times a 1 rad/s error. Keyword arguments override any field.

        Raises
        ------
        ValueError
            If a limit the configuration needs is missing (``None``).
        """
        for name in ("q_min", "q_max", "qd_max", "tau_max"):
            if getattr(limits, name) is None:
                raise ValueError(f"the joint limits need {name}, not None")
        span = limits.q_max - limits.q_min
        values = dict(
            kp=kp, kd=kd, lim_p=0.1 * kp, lim_d=1.0 * kd,
            guard_kp=50.0, guard_kv=0.5 * limits.tau_max, guard_ki=0.01 * limits.tau_max,
            guard_small=guard_fraction * limits.tau_max, guard_large=0.5 * limits.tau_max,
            q_min=limits.q_min, q_max=limits.q_max, qd_max=limits.qd_max,
            q_hard_min=limits.q_min - margin * span, q_hard_max=limits.q_max + margin * span,
            qd_hard_max=(1 + margin) * limits.qd_max, tau_max=limits.tau_max,
            current_per_torque=current_per_torque)
        values.update(kwargs)
        return cls(**values)

    def encode(self):
        """Return the register words of this configuration.

        Returns
        -------
        dict
            ``{register name: int}`` for every ``parameter`` register of :data:`REGISTERS`,
            plus ``"mode"``.

        Raises
        ------
        FixedPointRangeError
            If a value does not fit its register's format (the message names the register,
            the value and the range).
        ValueError
            If a limit or gain that must be non-negative is negative, or a count is not a
            non-negative integer.
        TypeError
            If a value is not a number.
        """
        words = {}
        for reg in REGISTERS.values():
            if reg.kind != "parameter":
                continue
            value = getattr(self, reg.name)
            what = f"controller {reg.name} ({reg.unit})"
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{what} must be a number, not {value!r}")
            if reg.format is COUNT and (not isinstance(value, int) or value < 0):
                raise ValueError(f"{what} must be an integer >= 0, not {value!r}")
            if reg.nonnegative and value < 0:
                raise ValueError(f"{what} must be >= 0, not {value!r}")
            words[reg.name] = int(reg.format.encode(value, what))
        mode = 0
        for name, (bit, _) in MODE_BITS.items():
            if getattr(self, name):
                mode |= 1 << bit
        words["mode"] = mode
        return words


# -- the interpreter ------------------------------------------------------------------------

def _flag(flags, name):
    if name.startswith("~"):
        return ~np.asarray(flags[name[1:]], dtype=bool)
    return np.asarray(flags[name], dtype=bool)


def fault_causes(flags):
    """Return the fault causes of a control step, in :data:`FAULTS` order (the ``safety`` op).

    Parameters
    ----------
    flags : dict of str to array_like of bool
        The step's flags: ``hard_pos_ok``, ``hard_vel_ok``, ``sat_ok``, ``ref_ok``, ``msg_ok``
        and the mode bits ``watchdog_reference``, ``watchdog_message``.

    Returns
    -------
    list of numpy.ndarray of bool
        One per fault code 1 .. 5.

    Notes
    -----
    The source paper (Sect. 3.1) asks for the deactivation "based on comparing the system state
    to maximum thresholds"; the counters (``sat_count``, ``ref_age``, ``msg_age``) are ``count``
    operations of the program and their limits ``le`` comparisons.
    """
    return [
        ~_flag(flags, "hard_pos_ok"),
        ~_flag(flags, "hard_vel_ok"),
        ~_flag(flags, "sat_ok"),
        _flag(flags, "watchdog_reference") & ~_flag(flags, "ref_ok"),
        _flag(flags, "watchdog_message") & ~_flag(flags, "msg_ok"),
    ]


def _latch(latch, causes):
    """Update the fault latch ``{"cause", "code"}`` in place with a step's causes."""
    new = np.zeros(np.shape(latch["cause"]), dtype=np.int64)
    first = np.zeros(np.shape(latch["cause"]), dtype=np.int64)
    for index in reversed(range(len(causes))):
        new = new | (np.asarray(causes[index], dtype=np.int64) << index)
        first = np.where(causes[index], index + 1, first)
    latch["code"] = np.where(latch["code"] == 0, first, latch["code"])
    latch["cause"] = latch["cause"] | new


def _sat(value):
    return saturate(value)[0]


def run_segment(regs, flags, segment, latch=None):
    """Interpret one segment of :data:`PROGRAM` on word registers and flags, in place.

    Parameters
    ----------
    regs : dict of str to numpy.ndarray of int64
        Every register and input the segment reads, by name (one batch shape); results are
        stored into it.
    flags : dict of str to numpy.ndarray of bool
        The mode bits and strobe flags (:data:`STROBE_FLAGS`); the flags the segment writes are
        stored into it.
    segment : str
        One of :data:`SEGMENTS`.
    latch : dict, optional
        The fault latch for ``output`` and ``clear``: ``cause`` (mask, bit ``code - 1`` of
        :data:`FAULTS`), ``code`` (first fault, 0 none); updated in place. The ``safety``
        operation also stores ``i_ref`` (the current reference word, 0 unless ``run_ok``) and
        ``enable`` (``run_ok``) into it.

    Raises
    ------
    ValueError
        If the segment is unknown.
    """
    if segment not in PROGRAM:
        raise ValueError(f"segment must be one of {SEGMENTS}, not {segment!r}")
    for op in PROGRAM[segment]:
        if op.kind == "and":
            flags[op.dst] = _flag(flags, op.a) & _flag(flags, op.b)
        elif op.kind in ("ge", "le", "within"):
            a, b = regs[op.a], regs[op.b]
            if op.kind == "ge":
                flags[op.dst] = a >= b
            elif op.kind == "le":
                flags[op.dst] = a <= b
            else:
                limit = np.maximum(b, 0)
                flags[op.dst] = (a >= -limit) & (a <= limit)
        elif op.kind == "safety":
            _latch(latch, fault_causes(flags))
            run_ok = (latch["cause"] == 0) & _flag(flags, "drive_enable")
            flags[op.dst] = run_ok
            latch["i_ref"] = np.where(run_ok, regs[op.a], 0)
            latch["enable"] = run_ok
            for name in STROBE_FLAGS:
                flags[name] = np.zeros(np.shape(run_ok), dtype=bool)
        elif op.kind == "clear_fault":
            latch["cause"] = np.zeros_like(latch["cause"])
            latch["code"] = np.zeros_like(latch["code"])
        else:
            a = regs[op.a]
            b = regs[op.b] if op.b else None
            if op.kind == "copy":
                result = a
            elif op.kind == "add":
                result = _sat(a + b)
            elif op.kind == "sub":
                result = _sat(a - b)
            elif op.kind == "count":
                result = np.where(_flag(flags, op.flag), _sat(a + b), 0)
            elif op.kind == "mul":
                shift = mul_shift(op)
                product = a * b  # exact in int64: |a b| <= 2**62
                result = _sat(round_shift(product >> shift, product & ((1 << shift) - 1),
                                          shift))
            elif op.kind == "clamp":
                limit = np.maximum(b, 0)
                result = np.clip(a, -limit, limit)
                if op.flag:
                    flags[op.flag] = (a > limit) | (a < -limit)
            elif op.kind == "max":
                result = np.maximum(a, b)
            elif op.kind == "min":
                result = np.minimum(a, b)
            elif op.kind == "select":
                result = np.where(_flag(flags, op.flag), a, b)
            regs[op.dst] = np.asarray(result, dtype=np.int64)


class JointControllerModel:
    """Golden model of one joint controller, stepped like the gateware.

    Parameters
    ----------
    words : dict
        Register words (``ControllerConfig.encode()``, or any words: the model takes whatever
        a register holds, as the gateware does). Registers not given are 0.

    Attributes
    ----------
    regs : dict of str to int
        Every register-file word after the last segment (signed).
    flags : dict of str to bool
        Every flag.
    latch : dict
        ``cause``, ``code``, ``i_ref`` (word), ``enable``.
    """

    def __init__(self, words):
        self.regs = {name: 0 for name in REGISTERS}
        self.mode = 0
        self.latch = {"cause": 0, "code": 0, "i_ref": 0, "enable": False}
        self.flags = {name: False for name in FLAGS}
        self.inputs = {name: 0 for name in INPUTS}
        self.inputs["one"] = 1
        for name, word in words.items():
            self.write(name, word)

    def write(self, name, word):
        """Write a register as the register port does (words wrap to 32 bits).

        Raises
        ------
        KeyError
            If there is no such register.
        """
        if name in REGISTERS:
            word = int(word) & 0xFFFFFFFF
            self.regs[name] = word - (1 << 32) if word >> 31 else word
        elif name == "mode":
            self.mode = int(word) & ((1 << len(MODE_BITS)) - 1)
        elif name != "fault":
            raise KeyError(f"no writable controller register named {name!r}")

    def read(self, name):
        """Return a register's word as the register port reads it (unsigned 32 bits)."""
        if name in REGISTERS:
            return self.regs[name] & 0xFFFFFFFF
        if name == "mode":
            return self.mode
        if name == "fault":
            return fault_word(self.latch["code"], self.latch["cause"])
        raise KeyError(f"no controller register named {name!r}")

    def strobe(self, reference=False, message=False):
        """Note a reference / neighbour-message strobe (kept until the next ``output``)."""
        self.flags["ref_seen"] |= bool(reference)
        self.flags["msg_seen"] |= bool(message)

    def _run(self, segment):
        regs = {name: np.asarray(value, dtype=np.int64) for name, value in self.regs.items()}
        regs.update({name: np.asarray(value, dtype=np.int64)
                     for name, value in self.inputs.items()})
        flags = {name: np.asarray(value) for name, value in self.flags.items()}
        for name, (bit, _) in MODE_BITS.items():
            flags[name] = np.asarray(bool(self.mode >> bit & 1))
        latch = {name: np.asarray(value) for name, value in self.latch.items()}
        run_segment(regs, flags, segment, latch)
        self.regs = {name: int(regs[name]) for name in REGISTERS}
        self.flags = {name: bool(flags[name]) for name in FLAGS}
        self.latch = {"cause": int(latch["cause"]), "code": int(latch["code"]),
                      "i_ref": int(latch["i_ref"]), "enable": bool(latch["enable"])}

    def clear(self):
        """Run the ``clear`` segment (the ``fault_clear`` input): counters and latch to 0."""
        self._run("clear")

    def feedback(self, q, qd, q_ref, qd_ref, qdd_ref):
        """Run the ``feedback`` segment on input words; return ``(q_model, qd_model, qdd_cmd)``.

        Parameters
        ----------
        q, qd, q_ref, qd_ref, qdd_ref : int
            Input words (Q15.16: rad, rad/s, rad, rad/s, rad/s^2).
        """
        self.inputs.update(q=q, qd=qd, q_ref=q_ref, qd_ref=qd_ref, qdd_ref=qdd_ref)
        self._run("feedback")
        return self.regs["q_model"], self.regs["qd_model"], self.regs["qdd_cmd"]

    def output(self, tau_model):
        """Run the ``output`` segment on the model's torque word; return ``(i_ref, enable)``.

        The reference / message strobes noted since the last ``output`` are consumed.
        """
        self.inputs["tau_model"] = tau_model
        self._run("output")
        return self.latch["i_ref"], self.latch["enable"]

    @property
    def fault_code(self):
        """int: the latched fault code (0: none), see :data:`FAULTS`."""
        return self.latch["code"]

    @property
    def fault_cause(self):
        """int: the latched cause mask (bit ``code - 1``)."""
        return self.latch["cause"]


def register_table():
    """Return the Markdown table of every controller register (docs/controller.md).

    Columns: address, name, kind, format, unit, meaning; the register-file words, then the
    special registers, then the inputs (ports, no address).
    """
    lines = ["| address | register | kind | format | unit | meaning |",
             "|---:|---|---|---|---|---|"]
    for reg in (*REGISTERS.values(), *SPECIAL_REGISTERS.values(), *INPUTS.values()):
        address = "-" if reg.address is None else f"0x{reg.address:02x}"
        fmt = reg.format.name if reg.format is not None else "bits"
        doc = reg.doc + (" (>= 0)" if reg.nonnegative else "")
        lines.append(f"| {address} | `{reg.name}` | {reg.kind} | {fmt} | {reg.unit or '-'} | "
                     f"{doc} |")
    return "\n".join(lines)


def program_listing():
    """Return the program as a Markdown list per segment (docs/controller.md)."""
    lines = []
    for segment, ops in PROGRAM.items():
        lines.append(f"**{segment}**")
        lines.append("")
        for op in ops:
            operands = ", ".join(x for x in (op.a, op.b) if x and op.kind != "clear_fault")
            extra = f" [{op.flag}]" if op.flag else ""
            target = f"`{op.dst}` = " if op.dst else ""
            lines.append(f"1. {target}{op.kind}({operands}){extra}")
        lines.append("")
    return "\n".join(lines).rstrip()
