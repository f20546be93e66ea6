"""The joint controller's program compiled into Python functions over plain integers.

:class:`linkdyn.model.controller.JointControllerModel` interprets :data:`~linkdyn.model.
controller.PROGRAM` op by op with numpy on 0-d arrays, which costs about 0.25 ms per joint and
control step; a closed loop steps every joint every 1 ms. This module derives, once, one Python
function per segment from the op list (as :mod:`linkdyn.model.compiled` does for the node
microprogram): its source is generated op by op in program order from the semantics of
:func:`~linkdyn.model.controller.run_segment`, over locals holding Python integers (exact, so a
product needs no split accumulator). Nothing of the arithmetic is written a second time:

- ``mul`` rounds with :func:`linkdyn.model.fixedpoint.round_shift` (the whole exact product as
  ``acc_low``, ``acc_high = 0``: the same ``floor((p + 2**(s-1)) / 2**s)``) and its shift is
  :func:`~linkdyn.model.controller.mul_shift`;
- a result of ``add``, ``sub``, ``mul``, ``count`` outside the word range goes through
  :func:`~linkdyn.model.fixedpoint.saturate`; inside it saturate is the identity, so only the
  range test is inlined;
- the ``safety`` operation's fault causes are :func:`~linkdyn.model.controller.fault_causes`
  and the latch update the interpreter's own: both are evaluated once, batched, on every
  combination of the flags ``fault_causes`` reads, into a table of (new cause mask, first code).

The state (registers, flags, fault latch) and the interface are those of
:class:`~linkdyn.model.controller.JointControllerModel`; :class:`FastJointController` equals it
word for word (tests/model/test_controller_fast.py). Input words are taken as the interpreter
takes them (Q15.16 words, within 32 bits).
"""

from __future__ import annotations

import itertools
from functools import lru_cache

import numpy as np

from . import controller as _controller
from .controller import (FLAGS, INPUTS, MODE_BITS, PROGRAM, REGISTERS, SEGMENTS, STROBE_FLAGS,
                         JointControllerModel, fault_causes, mul_shift)
from .fixedpoint import WORD_WIDTH, round_shift, saturate

__all__ = ["FastJointController", "segment_source", "compiled_segments", "fault_table"]

# The word range of saturate(): inside it, saturate returns its input unchanged.
_LOW, _HIGH = -(1 << (WORD_WIDTH - 1)), (1 << (WORD_WIDTH - 1)) - 1


class _Recorder(dict):
    """A flags mapping that notes which names are read (every flag reads as False)."""

    def __missing__(self, name):
        self[name] = np.asarray(False)
        return self[name]


@lru_cache(maxsize=None)
def fault_table():
    """Return the ``safety`` operation's fault causes as a table over the flags they depend on.

    Returns
    -------
    names : tuple of str
        The flags :func:`~linkdyn.model.controller.fault_causes` reads, in the order it reads
        them.
    table : dict
        ``{tuple of bool (one per name): (cause mask, first code)}`` for all ``2**len(names)``
        combinations: the mask and code the interpreter's latch update gives from an empty
        latch (the code is 0 if there is no cause).
    """
    recorder = _Recorder()
    fault_causes(recorder)
    names = tuple(recorder)
    combos = list(itertools.product((False, True), repeat=len(names)))
    columns = np.array(combos, dtype=bool).reshape(len(combos), len(names)).T
    flags = {name: columns[k] for k, name in enumerate(names)}
    latch = {"cause": np.zeros(len(combos), dtype=np.int64),
             "code": np.zeros(len(combos), dtype=np.int64)}
    _controller._latch(latch, fault_causes(flags))
    table = {combo: (int(latch["cause"][k]), int(latch["code"][k]))
             for k, combo in enumerate(combos)}
    return names, table


def _flag_expr(name):
    if name.startswith("~"):
        return f"(not f_{name[1:]})"
    return f"f_{name}"


def _saturated(dst, expression):
    return [f"{dst} = {expression}",
            f"if not {_LOW} <= {dst} <= {_HIGH}:",
            f"    {dst} = int(saturate({dst})[0])"]


def segment_source(segment, name=None):
    """Return the Python source of one segment of :data:`~linkdyn.model.controller.PROGRAM`.

    Parameters
    ----------
    segment : str
        One of :data:`~linkdyn.model.controller.SEGMENTS`.
    name : str, optional
        Function name (default ``segment_<segment>``).

    Returns
    -------
    str
        The source of ``f(regs, flags, inputs, latch, mode)``: ``regs`` (register words),
        ``flags`` and ``latch`` are dicts of Python ints / bools updated in place as
        :func:`~linkdyn.model.controller.run_segment` updates them; ``inputs`` the input words
        by name; ``mode`` the mode register. It calls ``round_shift``, ``saturate`` (of
        :mod:`linkdyn.model.fixedpoint`) and ``FAULT_TABLE``, bound under those names.

    Raises
    ------
    ValueError
        If the segment is unknown.
    """
    if segment not in PROGRAM:
        raise ValueError(f"segment must be one of {SEGMENTS}, not {segment!r}")
    name = name or f"segment_{segment}"
    body = []
    word_loads, flag_loads = [], []
    words_made, flags_made = set(), set(MODE_BITS)
    words_written, flags_written = [], list(MODE_BITS)

    def word(operand):
        if operand not in words_made and operand not in word_loads:
            word_loads.append(operand)
        return f"r_{operand}"

    def flag(operand):
        bare = operand.lstrip("~")
        if bare not in flags_made and bare not in flag_loads:
            flag_loads.append(bare)
        return _flag_expr(operand)

    def set_word(dst):
        words_made.add(dst)
        if dst not in words_written:
            words_written.append(dst)
        return f"r_{dst}"

    def set_flag(dst):
        flags_made.add(dst)
        if dst not in flags_written:
            flags_written.append(dst)
        return f"f_{dst}"

    fault_names, _ = fault_table()
    for op in PROGRAM[segment]:
        kind = op.kind
        if kind == "and":
            a, b = flag(op.a), flag(op.b)
            body.append(f"{set_flag(op.dst)} = {a} and {b}")
        elif kind in ("ge", "le"):
            a, b = word(op.a), word(op.b)
            body.append(f"{set_flag(op.dst)} = {a} {'>=' if kind == 'ge' else '<='} {b}")
        elif kind == "within":
            a, b = word(op.a), word(op.b)
            body.append(f"limit = {b} if {b} > 0 else 0")
            body.append(f"{set_flag(op.dst)} = -limit <= {a} <= limit")
        elif kind == "safety":
            key = ", ".join(flag(n) for n in fault_names)
            a = word(op.a)
            body += [f"new_cause, first = FAULT_TABLE[({key},)]",
                     "if latch['code'] == 0:",
                     "    latch['code'] = first",
                     "latch['cause'] = latch['cause'] | new_cause",
                     f"{set_flag(op.dst)} = latch['cause'] == 0 and {flag('drive_enable')}",
                     f"latch['i_ref'] = {a} if f_{op.dst} else 0",
                     f"latch['enable'] = f_{op.dst}"]
            for strobe in STROBE_FLAGS:
                body.append(f"{set_flag(strobe)} = False")
        elif kind == "clear_fault":
            body += ["latch['cause'] = 0", "latch['code'] = 0"]
        else:
            a = word(op.a)
            b = word(op.b) if op.b else None
            if kind == "copy":
                body.append(f"{set_word(op.dst)} = {a}")
            elif kind in ("add", "sub"):
                body += _saturated(set_word(op.dst), f"{a} {'+' if kind == 'add' else '-'} {b}")
            elif kind == "count":
                dst = set_word(op.dst)
                body.append(f"if {flag(op.flag)}:")
                body += ["    " + line for line in _saturated(dst, f"{a} + {b}")]
                body += ["else:", f"    {dst} = 0"]
            elif kind == "mul":
                body += _saturated(set_word(op.dst),
                                   f"round_shift(0, {a} * {b}, {mul_shift(op)})")
            elif kind == "clamp":
                body.append(f"limit = {b} if {b} > 0 else 0")
                if op.flag:
                    body.append(f"{set_flag(op.flag)} = {a} > limit or {a} < -limit")
                dst = set_word(op.dst)
                body.append(f"{dst} = -limit if {a} < -limit else (limit if {a} > limit "
                            f"else {a})")
            elif kind == "max":
                body.append(f"{set_word(op.dst)} = {a} if {a} >= {b} else {b}")
            elif kind == "min":
                body.append(f"{set_word(op.dst)} = {a} if {a} <= {b} else {b}")
            elif kind == "select":
                condition = flag(op.flag)
                body.append(f"{set_word(op.dst)} = {a} if {condition} else {b}")
            else:  # pragma: no cover - OP_KINDS is checked by Op
                raise ValueError(f"no compiled form of operation {kind!r}")
    lines = [f"def {name}(regs, flags, inputs, latch, mode):"]
    for operand in word_loads:
        table = "inputs" if operand in INPUTS else "regs"
        lines.append(f"    r_{operand} = {table}[{operand!r}]")
    for mode_flag, (bit, _) in MODE_BITS.items():
        lines.append(f"    f_{mode_flag} = bool(mode >> {bit} & 1)")
    for operand in flag_loads:
        lines.append(f"    f_{operand} = flags[{operand!r}]")
    lines += ["    " + line for line in body]
    lines += [f"    regs[{dst!r}] = r_{dst}" for dst in words_written]
    lines += [f"    flags[{dst!r}] = f_{dst}" for dst in flags_written]
    lines.append("    return None")
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=None)
def compiled_segments():
    """Return ``{segment: function}`` compiled from :func:`segment_source` (built once)."""
    _, table = fault_table()
    functions = {}
    for segment in SEGMENTS:
        name = f"segment_{segment}"
        namespace = {"round_shift": round_shift, "saturate": saturate, "FAULT_TABLE": table}
        exec(compile(segment_source(segment, name), f"<linkdyn controller {name}>", "exec"),
             namespace)
        functions[segment] = namespace[name]
    return functions


class FastJointController(JointControllerModel):
    """Golden model of one joint controller, the program compiled (one state, Python ints).

    The interface and state are those of :class:`~linkdyn.model.controller.JointControllerModel`
    (``regs``, ``flags``, ``latch``, ``inputs``, ``mode``, :meth:`write`, :meth:`read`,
    :meth:`strobe`, :meth:`clear`, :meth:`feedback`, :meth:`output`, ``fault_code``,
    ``fault_cause``); each segment runs the function :func:`compiled_segments` derived from
    :data:`~linkdyn.model.controller.PROGRAM`, equal word for word to the interpreter
    (tests/model/test_controller_fast.py).

    Parameters
    ----------
    words : dict
        Register words (``ControllerConfig.encode()``, or any words). Registers not given are 0.
    """

    def __init__(self, words):
        self._segments = compiled_segments()
        super().__init__(words)

    def _run(self, segment):
        self._segments[segment](self.regs, self.flags, self.inputs, self.latch, self.mode)

    def feedback(self, q, qd, q_ref, qd_ref, qdd_ref):
        """Run the ``feedback`` segment on input words; return ``(q_model, qd_model, qdd_cmd)``.

        Parameters
        ----------
        q, qd, q_ref, qd_ref, qdd_ref : int
            Input words (Q15.16: rad, rad/s, rad, rad/s, rad/s^2).
        """
        inputs = self.inputs
        inputs["q"], inputs["qd"], inputs["q_ref"] = int(q), int(qd), int(q_ref)
        inputs["qd_ref"], inputs["qdd_ref"] = int(qd_ref), int(qdd_ref)
        self._segments["feedback"](self.regs, self.flags, inputs, self.latch, self.mode)
        regs = self.regs
        return regs["q_model"], regs["qd_model"], regs["qdd_cmd"]

    def output(self, tau_model):
        """Run the ``output`` segment on the model's torque word; return ``(i_ref, enable)``."""
        self.inputs["tau_model"] = int(tau_model)
        self._segments["output"](self.regs, self.flags, self.inputs, self.latch, self.mode)
        return self.latch["i_ref"], self.latch["enable"]


assert set(FLAGS) >= set(MODE_BITS) and set(REGISTERS).isdisjoint(INPUTS)
