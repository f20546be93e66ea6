"""The joint controller of a LinkDyn node (source paper Sect. 3.1, Fig. 7), from its program.

The arithmetic is defined once in :mod:`linkdyn.model.controller` (registers, formats and the
operation list :data:`~linkdyn.model.controller.PROGRAM`); this component executes that list
from a ROM, one operation at a time, on one ALU and one multiplier::

    sensor q, qd ------+                                   (captured when a segment starts)
    reference q,qd,qdd-+--> input registers --+
    model.tau ---------+                      |  a (register file or an input)
                                              v
    register port --> register file (block RAM, read ports a, b) --> ALU / multiplier --+
         ^                   ^ write                                                     |
         |                   +--------------------- result -----------------------------+
    special registers: mode, fault latch                     |-> flags (1 bit)
                                                             |-> output registers (model q, qd,
                                                             |   qdd, tau_guard, tau_cmd)
                                                             '-> safety: fault latch,
                                                                 actuator i_ref, enable

The program's words (addresses, operation, flags) are a ROM read at the next ``pc``; the shut-off
counters and their limits are register-file words, advanced by ``count`` operations.

Operation timing (every block-RAM output, adder and multiplier output registered, for 100 MHz):
an operation takes :data:`OP_CYCLES` = 5 cycles (block-RAM read, operand registers, the adders
registered, choose / saturate registered, write), a ``mul`` :data:`MUL_CYCLES` = 8 (read, operand
registers, multiplier operand registers, four 18 x 18 partial products -- one DSP48A1 /
MULT18X18D each --, the middle and the outer ones (with the rounding constant) added, their sum,
saturation, write). :data:`CYCLES` gives each segment's cycles.

Requests: ``start`` runs the ``feedback`` segment (sensor and reference ports are captured in the
cycle it starts); ``model.valid`` pulses when ``model.q, qd, qdd`` hold its results;
``model.tau_valid`` runs the ``output`` segment (``model.tau`` captured when it starts); ``done``
pulses when ``actuator.i_ref`` and ``actuator.enable`` are updated. A request that comes while
the controller is busy waits (``fault_clear`` first, then ``output``, then ``feedback``).

The default is pipelined (timing above); ``JointController(pipelined=False)`` drops the operand,
adder and result registers (2 cycles per operation, 6 per ``mul``) for slower clocks.
"""

from amaranth.hdl import Cat, Const, Module, Mux, ResetSignal, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from linkdyn.model.controller import (FAULT_CAUSE_SHIFT, FAULT_CODE_BITS, FAULTS, FLAGS,
                                      INPUTS, MODE_BITS, OUTPUT_PORTS, PROGRAM,
                                      REGISTER_FILE_DEPTH, REGISTERS, SEGMENTS,
                                      SPECIAL_REGISTERS, mul_shift)
from linkdyn.model.fixedpoint import WORD_WIDTH

__all__ = ["JointController", "SensorSignature", "ReferenceSignature", "ModelSignature",
           "ActuatorSignature", "RegisterPortSignature", "ALU_OPS", "CYCLES", "OP_CYCLES",
           "MUL_CYCLES", "OP_CYCLES_OF", "MUL_CYCLES_OF", "segment_cycles",
           "op_index"]

#: ALU operation codes, in encoding order.
ALU_OPS = ("copy", "add", "sub", "mul", "clamp", "max", "min", "select", "ge", "le", "within",
           "and", "count", "safety", "clear_fault")
#: Cycles of an operation, ``{pipelined: cycles}``: pipelined, register-file read, operand
#: registers, adders, choose and write; compact, read, then compute and write.
OP_CYCLES_OF = {True: 5, False: 2}
#: Cycles of a ``mul`` operation, ``{pipelined: cycles}``: the operation's reads, multiplier
#: operand registers, partial products, two additions (pipelined: registered between them),
#: round/saturate, write.
MUL_CYCLES_OF = {True: 8, False: 6}
#: Cycles of an operation and of a ``mul`` of the default (pipelined) controller.
OP_CYCLES = OP_CYCLES_OF[True]
MUL_CYCLES = MUL_CYCLES_OF[True]
#: Width of the register port address: the register file below 64, special registers above.
ADDRESS_WIDTH = 7
#: Where the program ROM goes, by the Amaranth platform's ``family`` (the platform given to
#: ``elaborate``; ``"logic"`` for any other platform and without one, as in simulation):
#: Spartan-6, block RAM (its 64 x 50 bits: two RAMB8BWER), LUTs kept for logic on the
#: LUT-bound XC6SLX9; elsewhere logic (its registered output keeps a block RAM's
#: clock-to-output out of the operand paths). Same synchronous read, cycles and words.
PROGRAM_ROM_STYLE = {"spartan6": "block"}
#: Input sources of operand ``a``: 0 is the register file, then :data:`INPUTS` in order.
SOURCES = ("register", *INPUTS)
#: The inputs that are constants (no input register).
_CONSTANT_INPUTS = ("zero", "one")
#: The flags ops write (the mode bits come first in :data:`FLAGS` and are read-only).
_WRITTEN_FLAGS = FLAGS[len(MODE_BITS):]

W = WORD_WIDTH


def segment_cycles(pipelined=True):
    """Return the cycles of each segment, ``{segment: cycles}``, from the request being taken
    to its result (``model.valid``, ``done``)."""
    return {name: sum(MUL_CYCLES_OF[pipelined] if op.kind == "mul" else OP_CYCLES_OF[pipelined]
                      for op in PROGRAM[name]) for name in SEGMENTS}


#: Cycles of each segment of the default (pipelined) controller.
CYCLES = segment_cycles(True)


def _flat_program():
    ops = []
    for name in SEGMENTS:
        for index, op in enumerate(PROGRAM[name]):
            ops.append((name, op, index == len(PROGRAM[name]) - 1))
    return ops


_FLAT = _flat_program()
#: ROM index of the first operation of each segment.
SEGMENT_START = {name: next(i for i, (seg, _, _) in enumerate(_FLAT) if seg == name)
                 for name in SEGMENTS}
#: ROM index of the last operation of each segment.
SEGMENT_END = {name: SEGMENT_START[name] + len(PROGRAM[name]) - 1 for name in SEGMENTS}


#: One word of the program ROM: the decoded operation.
CONTROL_LAYOUT = data.StructLayout({
    "alu_op": range(len(ALU_OPS)),
    "a_source": range(len(SOURCES)),
    "a_addr": range(REGISTER_FILE_DEPTH),
    "b_addr": range(REGISTER_FILE_DEPTH),
    "dst_addr": range(REGISTER_FILE_DEPTH),
    "writes_word": 1,
    "writes_flag": 1,
    "flag_dst": range(len(_WRITTEN_FLAGS)),
    "cond": range(len(FLAGS)),
    "cond_invert": 1,
    "cond_b": range(len(FLAGS)),
    "cond_b_invert": 1,
    "shift_28": 1,
    "mul": 1,
    "last": 1,
    "port": range(len(OUTPUT_PORTS) + 1),
})


def _control(op, is_last):
    word = {"alu_op": ALU_OPS.index(op.kind), "last": int(is_last)}

    def flag(field, name):
        word[field] = FLAGS.index(name.lstrip("~"))
        word[field + "_invert"] = int(name.startswith("~"))

    if op.kind == "and":
        flag("cond", op.a)
        flag("cond_b", op.b)
    else:
        if op.a in INPUTS:
            word["a_source"] = SOURCES.index(op.a)
        else:
            word["a_addr"] = REGISTERS[op.a].address
        if op.b:
            word["b_addr"] = REGISTERS[op.b].address
    if op.kind in ("select", "count"):
        flag("cond", op.flag)
    if op.kind == "mul":
        shift = mul_shift(op)
        if shift not in (16, 28):
            raise ValueError(f"the multiplier implements the shifts 16 and 28, not {shift} "
                             f"(mul into {op.dst!r})")
        word["shift_28"] = int(shift == 28)
        word["mul"] = 1                # decoded in the ROM: the sequencer's timing needs it
    if op.dst in REGISTERS:
        word.update(writes_word=1, dst_addr=REGISTERS[op.dst].address)
        if op.dst in OUTPUT_PORTS:
            word["port"] = OUTPUT_PORTS.index(op.dst) + 1
    elif op.dst:
        word.update(writes_flag=1, flag_dst=_WRITTEN_FLAGS.index(op.dst))
    if op.kind == "clamp" and op.flag:
        word.update(writes_flag=1, flag_dst=_WRITTEN_FLAGS.index(op.flag))
    return word


#: Depth of the program ROM: every address ``pc`` can hold (the entries after the program stop
#: the sequencer, so that no state, however reached, runs an undefined operation).
ROM_DEPTH = 1 << max(1, (len(_FLAT) - 1).bit_length())


def control_words():
    """Return the program ROM's words (dicts of :data:`CONTROL_LAYOUT` fields), one per
    operation of :data:`~linkdyn.model.controller.PROGRAM`, segments in order, then
    ``copy`` operations that write nothing and end (``last``) up to :data:`ROM_DEPTH`."""
    words = [_control(op, is_last) for _, op, is_last in _FLAT]
    return words + [{"alu_op": ALU_OPS.index("copy"), "last": 1}] * (ROM_DEPTH - len(words))


def op_index(segment, dst):
    """Return the ROM index of the operation of ``segment`` that writes ``dst``.

    Raises
    ------
    KeyError
        If there is none.
    """
    for index, (seg, op, _) in enumerate(_FLAT):
        if seg == segment and op.dst == dst:
            return index
    raise KeyError(f"no operation writes {dst!r} in segment {segment!r}")


SensorSignature = wiring.Signature({"q": Out(signed(W)), "qd": Out(signed(W))})
SensorSignature.__doc__ = ("Joint sensor (driver side): position ``q`` (rad), velocity ``qd`` "
                           "(rad/s), Q15.16.")

ReferenceSignature = wiring.Signature({
    "q": Out(signed(W)), "qd": Out(signed(W)), "qdd": Out(signed(W)), "strobe": Out(1)})

ModelSignature = wiring.Signature({
    "q": Out(signed(W)), "qd": Out(signed(W)), "qdd": Out(signed(W)), "valid": Out(1),
    "tau": In(signed(W)), "tau_valid": In(1)})

ActuatorSignature = wiring.Signature({"i_ref": Out(signed(W)), "enable": Out(1)})

RegisterPortSignature = wiring.Signature({
    "addr": Out(ADDRESS_WIDTH), "w_en": Out(1), "w_data": Out(W), "w_ready": In(1),
    "r_data": In(W)})


class _Probe:
    """Internal signals exposed for formal properties (not ports; driven by the component)."""

    def __init__(self):
        self.executing = Signal(name="probe_executing")   # an operation's result is written
        self.index = Signal(range(ROM_DEPTH), name="probe_index")
        self.a = Signal(signed(W), name="probe_a")
        self.b = Signal(signed(W), name="probe_b")
        self.a_source = Signal(range(len(SOURCES)), name="probe_a_source")
        self.a_addr = Signal(range(REGISTER_FILE_DEPTH), name="probe_a_addr")
        self.b_addr = Signal(range(REGISTER_FILE_DEPTH), name="probe_b_addr")
        self.result = Signal(signed(W), name="probe_result")
        self.flags = Signal(len(FLAGS), name="probe_flags")
        self.flag_result = Signal(name="probe_flag_result")
        self.cause = Signal(len(FAULTS), name="probe_cause")


class JointController(wiring.Component):
    """The joint controller of paper Fig. 7, executing :data:`linkdyn.model.controller.PROGRAM`.

    Bit for bit equal to :class:`linkdyn.model.controller.JointControllerModel`.

    Parameters
    ----------
    pipelined : bool
        Register the operands, the adders and the result (5 cycles per operation, 8 per
        ``mul``: for 100 MHz), or not (2 and 6 cycles, fewer LUTs, a lower clock). Attributes
        ``op_cycles``, ``mul_cycles`` and ``cycles`` (per segment) give the timing.

    Attributes
    ----------
    op_cycles, mul_cycles : int
        Cycles of an operation and of a ``mul``.
    cycles : dict of str to int
        Cycles of each segment (:func:`segment_cycles`).
    probe : object
        Internal signals (the operation finishing, its operands, read addresses, result,
        flags) for the formal properties of :mod:`linkdyn.sim.controller_formal`; not ports.

    Raises
    ------
    TypeError
        If ``pipelined`` is not a bool.

    Members
    -------
    sensor : In(SensorSignature)
        Measured ``q`` (rad), ``qd`` (rad/s), Q15.16; captured when ``feedback`` starts.
    reference : In(ReferenceSignature)
        ``q, qd, qdd`` reference (Q15.16), captured when ``feedback`` starts; ``strobe``: a new
        reference arrived (feeds the reference watchdog).
    model : Out(ModelSignature)
        To the node: ``q, qd, qdd`` (the state MUX's output and ``qdd_cmd``), ``valid`` (one
        cycle when they are updated); from the node: ``tau`` (N·m, Q15.16) with ``tau_valid``
        (starts ``output``).
    actuator : Out(ActuatorSignature)
        ``i_ref``: the current reference (A, Q15.16), 0 while off or faulted; ``enable``.
    reg : In(RegisterPortSignature)
        Register access: ``addr`` (the register file's words at
        :attr:`Register.address <linkdyn.model.controller.Register>`, special registers at
        64+), ``w_en`` / ``w_data`` write (taken when ``w_ready``, i.e. not busy; hold it until
        then), ``r_data`` the word at ``addr`` (combinational; valid while not busy).
    start : In(1)
        Run ``feedback``.
    message_strobe : In(1)
        A neighbour message arrived (feeds the message watchdog).
    fault_clear : In(1)
        Clear the fault latch and the shut-off's counters (when not busy; else after the step).
    busy : Out(1)
        A segment runs.
    done : Out(1)
        One cycle when ``output`` has finished (``actuator`` updated).
    fault : Out(1)
        A fault is latched.
    fault_code : Out(3)
        The first fault's code (:data:`~linkdyn.model.controller.FAULTS`), 0 none.
    tau_cmd, tau_guard : Out(signed(32))
        Commanded and guard torque of the last ``output`` (N·m, Q15.16).
    """

    def __init__(self, *, pipelined=True):
        if not isinstance(pipelined, bool):
            raise TypeError(f"pipelined must be a bool, not {pipelined!r}")
        self._pipelined = pipelined
        self.op_cycles = OP_CYCLES_OF[pipelined]
        self.mul_cycles = MUL_CYCLES_OF[pipelined]
        self.cycles = segment_cycles(pipelined)
        super().__init__({
            "sensor": In(SensorSignature),
            "reference": In(ReferenceSignature),
            "model": Out(ModelSignature),
            "actuator": Out(ActuatorSignature),
            "reg": In(RegisterPortSignature),
            "start": In(1),
            "message_strobe": In(1),
            "fault_clear": In(1),
            "busy": Out(1),
            "done": Out(1),
            "fault": Out(1),
            "fault_code": Out(3),
            "tau_cmd": Out(signed(W)),
            "tau_guard": Out(signed(W)),
        })
        self.probe = _Probe()

    # The limiting arithmetic, one method each so that a test can build a deliberately broken
    # copy (the formal proofs must fail on it).

    def clamp(self, a, limit, negative_limit, above, below):
        """Return ``(result, active)`` of ``clamp`` (Amaranth values).

        ``result = min(max(a, -limit), limit)`` and ``active = |a| > limit`` for a
        ``limit >= 0`` (``max(b, 0)`` of the operand), given ``negative_limit = -limit``,
        ``above = a > limit`` and ``below = a < -limit`` (from the ALU's adders).
        """
        return Mux(above, limit, Mux(below, negative_limit, a)), above | below

    def elaborate(self, platform):
        m = Module()
        probe = self.probe

        # -- register file: block RAM (two copies, written together: read ports a and b,
        #    synchronous), one write port --
        m.submodules.rf = rf = Memory(shape=signed(W), depth=REGISTER_FILE_DEPTH, init=[],
                                      attrs={"ram_style": "block"})
        read_a = rf.read_port(transparent_for=())
        read_b = rf.read_port(transparent_for=())
        write = rf.write_port()

        # -- special registers: mode bits, fault latch --
        mode = Signal(len(MODE_BITS))
        cause = Signal(len(FAULTS))
        code = Signal(3)

        # -- input registers, captured when a segment starts; the constant inputs are not
        #    registers (below) --
        inputs = {name: Signal(signed(W), name=f"in_{name}") for name in INPUTS
                  if name not in _CONSTANT_INPUTS}

        # -- flags: mode bits (read-only), then the written flags --
        written = Signal(len(_WRITTEN_FLAGS))
        flags = Cat(mode, written)

        def flag(name):
            return flags[FLAGS.index(name)]

        # -- sequencer state --
        running = Signal()
        pc = Signal(range(ROM_DEPTH))
        phase = Signal(range(self.mul_cycles))
        pending = {name: Signal(name=f"pending_{name}") for name in SEGMENTS}

        m.d.comb += [
            self.busy.eq(running),
            self.reg.w_ready.eq(~running),
            self.fault.eq(cause.any()),
            self.fault_code.eq(code),
        ]

        # -- the operation at pc, from the program ROM (PROGRAM_ROM_STYLE) --
        style = PROGRAM_ROM_STYLE.get(getattr(platform, "family", None), "logic")
        m.submodules.rom = rom = Memory(shape=CONTROL_LAYOUT, depth=ROM_DEPTH,
                                        init=control_words(), attrs={"rom_style": style})
        # The ROM is read synchronously at the next pc, so that its word (the operation at pc)
        # comes out of a register.
        pc_next = Signal.like(pc)
        m.d.comb += pc_next.eq(pc)
        m.d.sync += pc.eq(pc_next)
        rom_read = rom.read_port(transparent_for=())
        m.d.comb += rom_read.addr.eq(pc_next)
        control = rom_read.data
        alu_op = control.alu_op
        cond = Signal()             # select's / count's flag; and's first flag
        cond_b = Signal()           # and's second flag
        m.d.comb += [cond.eq(flags.bit_select(control.cond, 1) ^ control.cond_invert),
                     cond_b.eq(flags.bit_select(control.cond_b, 1) ^ control.cond_b_invert)]

        def is_op(*kinds):
            return alu_op.matches(*(ALU_OPS.index(kind) for kind in kinds))

        # -- operands: addresses in the first cycle of an operation, words in the second --
        idle = ~running
        m.d.comb += [
            read_a.addr.eq(Mux(idle, self.reg.addr[:len(read_a.addr)], control.a_addr)),
            read_b.addr.eq(control.b_addr),
        ]
        # The input operand is chosen from registers in the cycle the block RAM reads (the
        # operation's word is there from its first cycle), so that only a 2:1 mux follows the
        # block RAM's output.
        # The constants 0 and 1 are the input word's register cleared (and its bit 0 set):
        # the choice is of the six input registers only.
        # (No reset: loaded every cycle; its clear for the constants is then the flip-flops'
        # synchronous reset, not a gate per bit beside the domain's reset.)
        input_word = Signal(signed(W), reset_less=True)
        from_file = Signal()
        input_choice = Signal(signed(W))
        with m.Switch(control.a_source):
            for name in INPUTS:
                if name not in _CONSTANT_INPUTS:
                    with m.Case(SOURCES.index(name)):
                        m.d.comb += input_choice.eq(inputs[name])
        m.d.sync += [input_word.eq(input_choice), from_file.eq(control.a_source == 0)]
        with m.If(control.a_source.matches(*(SOURCES.index(name) for name in _CONSTANT_INPUTS))):
            m.d.sync += input_word.eq(control.a_source == SOURCES.index("one"))
        a_read = Signal(signed(W))
        m.d.comb += a_read.eq(Mux(from_file, read_a.data, input_word))
        # Operand registers (cycle 1 -> 2); they hold for the rest of the operation. The limit
        # L = max(b, 0) of clamp / within is registered with them.
        a = Signal(signed(W))
        b = Signal(signed(W))
        limit = Signal(signed(W))
        stage = m.d.sync if self._pipelined else m.d.comb
        # Whether the op limits (clamp, within), decoded a cycle ahead like the input word, so
        # that one gate follows the block RAM's sign bit into the limit register's reset.
        limits = Signal()
        m.d.sync += limits.eq(is_op("clamp", "within"))
        stage += [a.eq(a_read), b.eq(read_b.data),
                  limit.eq(Mux(read_b.data[-1] & limits, 0, read_b.data))]

        def saturate(value):
            high = value[W - 1:]
            fits = high.all() | ~high.any()
            top = Const((1 << (W - 1)) - 1, signed(W))
            bottom = Const(-(1 << (W - 1)), signed(W))
            return Mux(fits, value[:W].as_signed(), Mux(value[-1], bottom, top))

        # -- ALU stage 1 (cycle 2 -> 3): the adders, registered. One adder gives a + b, a - b,
        #    or a - L for clamp / within (L = max(b, 0)); 33 bits, exact. --
        sum_or_difference = Signal(signed(W + 1))
        # One adder: a - L is a + ~L + 1.
        subtract = ~is_op("add", "count")
        m.d.comb += sum_or_difference.eq(a + Mux(subtract, ~limit, limit) + subtract)
        total = Signal(signed(W + 1))
        negative_limit = Signal(signed(W))
        below = Signal()            # a < -L
        equal = Signal()            # a == b (a == L)
        stage += [
            total.eq(sum_or_difference),
            negative_limit.eq(-limit),
            below.eq((a + limit)[-1]),
            equal.eq(a == limit),
        ]
        # -- ALU stage 2 (cycle 3): choose, saturate; the result is written at the clock edge --
        a_less = total[-1]                                   # a - b < 0
        clamped, clamp_active = self.clamp(a, limit, negative_limit, ~a_less & ~equal, below)
        result = Signal(signed(W))
        flag_result = Signal()
        with m.Switch(alu_op):
            with m.Case(ALU_OPS.index("copy")):
                m.d.comb += result.eq(a)
            with m.Case(ALU_OPS.index("add"), ALU_OPS.index("sub")):
                m.d.comb += result.eq(saturate(total))
            with m.Case(ALU_OPS.index("count")):
                m.d.comb += result.eq(Mux(cond, saturate(total), 0))
            with m.Case(ALU_OPS.index("clamp")):
                m.d.comb += [result.eq(clamped), flag_result.eq(clamp_active)]
            with m.Case(ALU_OPS.index("max")):
                m.d.comb += result.eq(Mux(a_less, b, a))
            with m.Case(ALU_OPS.index("min")):
                m.d.comb += result.eq(Mux(a_less, a, b))
            with m.Case(ALU_OPS.index("select")):
                m.d.comb += result.eq(Mux(cond, a, b))
            with m.Case(ALU_OPS.index("ge")):
                m.d.comb += flag_result.eq(~a_less)
            with m.Case(ALU_OPS.index("le")):
                m.d.comb += flag_result.eq(a_less | equal)
            with m.Case(ALU_OPS.index("within")):
                m.d.comb += flag_result.eq(~clamp_active)
            with m.Case(ALU_OPS.index("and")):
                m.d.comb += flag_result.eq(cond & cond_b)

        # -- pipelined: the result and the flag registered (cycle 3 -> 4), written in cycle 4 --
        alu_result = Signal(signed(W), reset_less=True)   # (its 0: the synchronous reset)
        alu_flag = Signal()
        stage += [alu_result.eq(result), alu_flag.eq(flag_result)]

        # -- multiplier: operand registers (cycle 2 -> 3), four 18 x 18 partial products (-> 4,
        #    one multiplier block each, a = a_hi 2**17 + a_lo with a_lo unsigned), their sum
        #    (-> 5), round half up and saturate (-> 6), write (cycle 6) --
        mul_a = Signal(signed(W))
        mul_b = Signal(signed(W))
        if self._pipelined:
            # Operand registers of their own (loaded as `a`, `b` are, enabled by a `mul`), so
            # that the multiplier's operands need not sit beside the ALU's.
            a_mul = Signal(signed(W))
            b_mul = Signal(signed(W))
            with m.If(control.mul):
                m.d.sync += [a_mul.eq(a_read), b_mul.eq(read_b.data)]
            m.d.sync += [mul_a.eq(a_mul), mul_b.eq(b_mul)]
        else:
            m.d.sync += [mul_a.eq(a), mul_b.eq(b)]
        low = 17
        a_lo = Cat(mul_a[:low], Const(0, 1)).as_signed()
        b_lo = Cat(mul_b[:low], Const(0, 1)).as_signed()
        a_hi = mul_a[low:].as_signed()
        b_hi = mul_b[low:].as_signed()
        pp_ll = Signal(2 * low)
        pp_lh = Signal(signed(low + 1 + W - low))
        pp_hl = Signal(signed(low + 1 + W - low))
        pp_hh = Signal(signed(2 * (W - low)))
        m.d.sync += [pp_ll.eq((a_lo * b_lo)[:2 * low]), pp_lh.eq(a_lo * b_hi),
                     pp_hl.eq(a_hi * b_lo), pp_hh.eq(a_hi * b_hi)]
        # The shift rides along (the op at pc does not change during a mul).
        product_shift_28 = control.shift_28
        # The product plus the rounding constant: pipelined in two additions (registered
        # between: the middle partial products' sum, the outer ones plus the constant), then
        # the sum; compact in one cycle. |product| <= 2**62: no overflow.
        middle = Signal(signed(low + 2 + W - low))
        outer = Signal(signed(2 * W))
        stage += [middle.eq(pp_lh + pp_hl),
                  outer.eq(Cat(pp_ll, pp_hh).as_signed()
                           + Mux(product_shift_28, 1 << 27, 1 << 15))]
        summed = Signal(signed(2 * W))
        m.d.sync += summed.eq(outer + (middle << low))
        mul_result = Signal(signed(W))
        rounded = Signal(signed(2 * W - 15))
        m.d.comb += rounded.eq(Mux(product_shift_28, summed >> 28, summed >> 16))
        m.d.sync += mul_result.eq(saturate(rounded))

        # An operation finishes in this cycle: its last.
        finishing = Signal()
        m.d.comb += finishing.eq(running & (phase == Mux(control.mul, self.mul_cycles - 1,
                                                         self.op_cycles - 1)))
        value = Signal(signed(W))
        m.d.comb += value.eq(Mux(control.mul, mul_result, alu_result))

        # -- safety: the step's causes, the fault latch, run_ok --
        causes = Signal(len(FAULTS))
        m.d.comb += causes.eq(Cat(
            ~flag("hard_pos_ok"),
            ~flag("hard_vel_ok"),
            ~flag("sat_ok"),
            flag("watchdog_reference") & ~flag("ref_ok"),
            flag("watchdog_message") & ~flag("msg_ok"),
        ))
        first = Signal(3)
        for index in reversed(range(len(FAULTS))):
            with m.If(causes[index]):
                m.d.comb += first.eq(index + 1)
        new_cause = Signal(len(FAULTS))
        m.d.comb += new_cause.eq(cause | causes)
        run_ok = Signal()
        m.d.comb += run_ok.eq(~new_cause.any() & flag("drive_enable"))
        with m.If(is_op("safety")):
            m.d.comb += flag_result.eq(run_ok)

        # -- probe (formal properties) --
        m.d.comb += [
            probe.executing.eq(finishing),
            probe.index.eq(pc),
            probe.a.eq(a),
            probe.b.eq(b),
            probe.a_source.eq(control.a_source),
            probe.a_addr.eq(control.a_addr),
            probe.b_addr.eq(control.b_addr),
            probe.result.eq(value),
            probe.flags.eq(flags),
            probe.flag_result.eq(alu_flag),
            probe.cause.eq(cause),
        ]

        # The current reference: 0 from the reset and from a safety operation that does not
        # run, both one synchronous clear of its flip-flops (written after the load below,
        # so it wins; the register has no other reset, so no gate per bit).
        i_ref = Signal(signed(W), reset_less=True)
        m.d.comb += self.actuator.i_ref.eq(i_ref)

        # -- requests and strobes --
        for name, signal in (("feedback", self.start), ("output", self.model.tau_valid),
                             ("clear", self.fault_clear)):
            with m.If(signal):
                m.d.sync += pending[name].eq(1)
        strobe_flags = {"ref_seen": self.reference.strobe, "msg_seen": self.message_strobe}
        m.d.sync += [self.model.valid.eq(0), self.done.eq(0)]

        # -- execution --
        with m.If(finishing):
            with m.If(control.writes_word):
                m.d.comb += [write.addr.eq(control.dst_addr), write.data.eq(value),
                             write.en.eq(1)]
                targets = {"q_model": self.model.q, "qd_model": self.model.qd,
                           "qdd_cmd": self.model.qdd, "tau_guard": self.tau_guard,
                           "tau_cmd": self.tau_cmd}
                for index, name in enumerate(OUTPUT_PORTS):
                    with m.If(control.port == index + 1):
                        m.d.sync += targets[name].eq(value)
            with m.If(control.writes_flag):
                m.d.sync += written.bit_select(control.flag_dst, 1).eq(alu_flag)
            with m.If(is_op("safety")):
                m.d.sync += [
                    cause.eq(new_cause),
                    i_ref.eq(a),
                    self.actuator.enable.eq(run_ok),
                ]
                with m.If(code == 0):
                    m.d.sync += code.eq(first)
            with m.If(is_op("clear_fault")):
                m.d.sync += [cause.eq(0), code.eq(0)]
            with m.If(control.last):
                m.d.sync += running.eq(0)
                with m.If(pc == SEGMENT_END["feedback"]):
                    m.d.sync += self.model.valid.eq(1)
                with m.If(pc == SEGMENT_END["output"]):
                    m.d.sync += self.done.eq(1)
            with m.Else():
                m.d.comb += pc_next.eq(pc + 1)
            m.d.sync += phase.eq(0)
        with m.Elif(running):
            m.d.sync += phase.eq(phase + 1)
        with m.If(ResetSignal() | (finishing & is_op("safety") & ~run_ok)):
            m.d.sync += i_ref.eq(0)
        # Strobe flags: set by their strobe, cleared by the safety op (a strobe in that cycle
        # counts for the next step); written after the flag write above, so they win.
        for name, strobe in strobe_flags.items():
            bit = written[_WRITTEN_FLAGS.index(name)]
            with m.If(finishing & is_op("safety")):
                m.d.sync += bit.eq(strobe)
            with m.Elif(strobe):
                m.d.sync += bit.eq(1)

        # -- idle: register port, requests (clear first, then output, then feedback) --
        # Reads: the word of the address given in the previous cycle.
        read_addr = Signal(ADDRESS_WIDTH)
        m.d.sync += read_addr.eq(self.reg.addr)
        with m.Switch(read_addr):
            with m.Case(SPECIAL_REGISTERS["mode"].address):
                m.d.comb += self.reg.r_data.eq(mode)
            with m.Case(SPECIAL_REGISTERS["fault"].address):
                assert len(code) == FAULT_CODE_BITS
                m.d.comb += self.reg.r_data.eq(
                    Cat(code, Const(0, FAULT_CAUSE_SHIFT - FAULT_CODE_BITS), cause))
            with m.Case(f"0{'-' * (ADDRESS_WIDTH - 1)}"):
                m.d.comb += self.reg.r_data.eq(read_a.data)
        with m.If(idle):
            with m.If(self.reg.w_en):
                with m.If(self.reg.addr < 64):
                    m.d.comb += [write.addr.eq(self.reg.addr), write.data.eq(self.reg.w_data),
                                 write.en.eq(1)]
                with m.If(self.reg.addr == SPECIAL_REGISTERS["mode"].address):
                    m.d.sync += mode.eq(self.reg.w_data)
            requested = {name: pending[name] | signal for name, signal in
                         (("feedback", self.start), ("output", self.model.tau_valid),
                          ("clear", self.fault_clear))}

            def begin(name):
                m.d.sync += [pending[name].eq(0), running.eq(1), phase.eq(0)]
                m.d.comb += pc_next.eq(SEGMENT_START[name])

            with m.If(requested["clear"]):
                begin("clear")
            with m.Elif(requested["output"]):
                begin("output")
                m.d.sync += inputs["tau_model"].eq(self.model.tau)
            with m.Elif(requested["feedback"]):
                begin("feedback")
                m.d.sync += [inputs["q"].eq(self.sensor.q), inputs["qd"].eq(self.sensor.qd),
                             inputs["q_ref"].eq(self.reference.q),
                             inputs["qd_ref"].eq(self.reference.qd),
                             inputs["qdd_ref"].eq(self.reference.qdd)]
        return m
