"""The arctangent of the friction model (eq. 20): CORDIC in vectoring mode, one step per cycle
or per two cycles (one shared shifter; every shift and addition registered), by family
(:data:`STEP_CYCLES`).

Bit-exact with :meth:`linkdyn.model.tables.Cordic.atan`: the vector ``(X, Y) = (2**30, x << 14)``
is rotated towards the x axis; step ``i`` (``i = 0 .. iterations - 1``)::

    if Y >= 0:  X, Y, Z = X + (Y >> i), Y - (X >> i), Z + A[i]
    else:       X, Y, Z = X - (Y >> i), Y + (X >> i), Z - A[i]

with arithmetic right shifts and the angle ROM ``A[i]`` of the model.

The model's registers are ``state_bits`` (48) wide; the values need fewer bits, and the
gateware holds them in the fewest that provably never overflow (:func:`state_widths`), so its
results are the model's for every input:

- ``X`` only grows from ``2**30`` (each step adds ``|Y >> i|``) and stays below the length of the
  vector: ``|(X, Y)_(i+1)| <= sqrt(1 + 2**-2i) |(X, Y)_i| + sqrt(2)`` (each truncating shift
  errs by less than one in each coordinate), so ``X < K (|(X, Y)_0| + sqrt(2) n)`` with the
  CORDIC gain ``K``: below ``2**46`` for a 32-bit input. It is held unsigned.
- ``|Y_(i+1)| = ||Y_i| - (X_i >> i)| <= max(|Y_i|, X_i >> i)``: ``Y`` never exceeds its start
  ``x << 14`` (46 bits signed) or ``X_i >> i`` (``X_0 = 2**30``; ``X >> i < 2**45`` for
  ``i >= 1``).
"""

import math

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from linkdyn.model.fixedpoint import WORD_WIDTH
from linkdyn.model.tables import CORDIC, Cordic

__all__ = ["CordicArctangent", "state_widths", "STEP_CYCLES", "ANGLE_ROM_STYLE"]

#: Cycles per CORDIC step (:class:`CordicArctangent`'s ``step_cycles``) on each FPGA family the
#: project builds for, by the family names of the board tops (``BoardTop.family``) and of the
#: node benchmark (:data:`linkdyn.bench.node.FAMILIES`). ECP5: two, every shift and every
#: addition between registers (100 MHz on an ECP5-6), on one shared barrel shifter (one node,
#: Yosys ``synth_ecp5``: 2,801 LUT4 against 2,906 with the two shifters of before); Spartan-6:
#: one, the smaller unit there (the unit alone 558 LUT6 against 586 for two-cycle steps;
#: whether it meets a Spartan-6 board's clock is for ISE's timing report). The one definition
#: of which family uses which.
STEP_CYCLES = {"ecp5": 2, "xc6s": 1}

#: Where the angle ROM of one-cycle steps goes, by the Amaranth platform's ``family`` (the
#: platform given to ``elaborate``; ``"logic"`` for any other and without one): block RAM on
#: Spartan-6 (LUT-bound XC6SLX9), logic elsewhere. Read a cycle ahead either way (same cycles
#: and words).
ANGLE_ROM_STYLE = {"spartan6": "block"}


def state_widths(cordic=CORDIC, input_width=WORD_WIDTH):
    """Return the widths the CORDIC state needs: ``(x_bits, y_bits)``.

    Parameters
    ----------
    cordic : Cordic
        The definition.
    input_width : int
        Width of the signed input word.

    Returns
    -------
    (int, int)
        Bits of the unsigned ``X`` and of the signed ``Y`` (see the module docstring).

    Raises
    ------
    ValueError
        If the model's ``state_bits`` would not hold the state (the model itself overflows).
    """
    y_start = 1 << (input_width - 1 + cordic.input_shift)  # |x << 14| <= 2**45
    gain = math.prod(math.sqrt(1 + 2.0 ** (-2 * i)) for i in range(cordic.iterations))
    length = gain * (math.hypot(1 << 30, y_start) + math.sqrt(2) * cordic.iterations)
    x_bits = math.ceil(math.log2(length))
    # |Y| <= max(|Y_0|, X_0 = 2**30, X >> 1): |Y| <= y_start.
    y_bits = max(input_width + cordic.input_shift, x_bits)
    if max(x_bits + 1, y_bits) > cordic.state_bits:
        raise ValueError(f"the CORDIC state needs {max(x_bits + 1, y_bits)} bits, "
                         f"more than state_bits = {cordic.state_bits}")
    return x_bits, y_bits


class CordicArctangent(wiring.Component):
    """``atan(x)`` of a Q15.16 word as a Q1.30 word, by an iterative CORDIC.

    A ``start`` in cycle ``c`` samples ``x``; ``result`` holds ``atan(x)`` from cycle
    ``c + latency`` (:attr:`latency` = ``step_cycles * iterations + 1``), when ``done`` pulses,
    until the next ``start``. A ``start`` while ``busy`` restarts the unit. The results do not
    depend on ``step_cycles``, only the latency does.

    Parameters
    ----------
    cordic : Cordic
        The CORDIC definition (default :data:`linkdyn.model.tables.CORDIC`: 24 steps, 48-bit
        state).
    step_cycles : int
        Cycles per step, 1 or 2 (default 2; per family: :data:`STEP_CYCLES`).

        - 2: one barrel shifter, shared: every cycle shifts ``X`` or ``Y`` into a register
          and every addition reads registers only (the order of two steps in four cycles:
          :meth:`_elaborate_shared_shifter`); latency ``2 iterations + 1`` (49 for the
          default definition). One cycle for a shift and an addition does not meet 100 MHz
          on an ECP5. The definition's iterations must be even.
        - 1: shift and add in one cycle, no registers between them; latency
          ``iterations + 1`` (25), and fewer LUTs (no shift registers, and the inversion of a
          subtraction merges into the shifter's LUTs).

    Members
    -------
    start : In(1)
        Sample ``x`` and start.
    x : In(signed(32))
        The argument, a Q15.16 word.
    result : Out(signed(32))
        ``Z``, the angle in Q1.30 (rad); changes while ``busy``.
    busy : Out(1)
        The iterations run.
    done : Out(1)
        Pulses in the first cycle ``result`` is final.

    Raises
    ------
    TypeError
        If ``cordic`` is not a :class:`~linkdyn.model.tables.Cordic`.
    ValueError
        If ``step_cycles`` is not 1 or 2, or is 2 for a definition with an odd number of
        iterations.
    """

    def __init__(self, cordic=CORDIC, *, step_cycles=2):
        if not isinstance(cordic, Cordic):
            raise TypeError(f"cordic must be a Cordic, not {cordic!r}")
        self._step_cycles = self.check_step_cycles(step_cycles)
        if self._step_cycles == 2 and cordic.iterations % 2:
            raise ValueError(f"Two-cycle steps run the iterations in pairs: the definition's "
                             f"iterations must be even, not {cordic.iterations}")
        self._cordic = cordic
        super().__init__({
            "start": In(1),
            "x": In(signed(WORD_WIDTH)),
            "result": Out(signed(WORD_WIDTH)),
            "busy": Out(1),
            "done": Out(1),
        })

    @property
    def cordic(self):
        """Cordic: the definition implemented."""
        return self._cordic

    @property
    def step_cycles(self):
        """int: cycles per step, 1 or 2."""
        return self._step_cycles

    @staticmethod
    def check_step_cycles(step_cycles, name="step_cycles"):
        """Return ``step_cycles`` if 1 or 2, else raise ``ValueError`` naming ``name``."""
        if not isinstance(step_cycles, int) or isinstance(step_cycles, bool) or \
                step_cycles not in (1, 2):
            raise ValueError(f"{name} must be 1 or 2, not {step_cycles!r}")
        return step_cycles

    @classmethod
    def latency_of(cls, cordic, step_cycles=2):
        """Return the cycles from ``start`` to ``done`` for a definition and a step timing:
        ``step_cycles * iterations + 1``.

        Raises
        ------
        ValueError
            If ``step_cycles`` is not 1 or 2.
        """
        return cls.check_step_cycles(step_cycles) * cordic.iterations + 1

    @property
    def latency(self):
        """int: cycles from ``start`` to ``done``, ``step_cycles * iterations + 1``."""
        return self.latency_of(self._cordic, self._step_cycles)

    def elaborate(self, platform):
        if self._step_cycles == 2:
            return self._elaborate_shared_shifter()
        return self._elaborate_one_cycle_steps(platform)

    def _elaborate_one_cycle_steps(self, platform):
        """One-cycle steps: both barrel shifters, the three adders every busy cycle."""
        m = Module()
        c = self._cordic
        n = c.iterations
        x_bits, y_bits = state_widths(c)
        big_x = Signal(unsigned(x_bits))
        big_y = Signal(signed(y_bits))
        z = self.result
        step = Signal(range(n))
        # The angle ROM, read a cycle ahead (A[0] with the start, A[i + 1] in step i), so that
        # its word comes out of a register (block RAM on Spartan-6: ANGLE_ROM_STYLE).
        depth = 1 << (n - 1).bit_length()
        m.submodules.angles = angles = Memory(
            shape=signed(WORD_WIDTH), depth=depth, init=list(c.angles) + [0] * (depth - n),
            attrs={"rom_style": ANGLE_ROM_STYLE.get(getattr(platform, "family", None),
                                                    "logic")})
        angle_read = angles.read_port()

        # One-cycle steps: dx = Y >> i, dy = X >> i, the angle A[i] and the direction, and
        # every busy cycle adds.
        dx = Signal(signed(y_bits))
        dy = Signal(unsigned(x_bits))
        angle = Signal(signed(WORD_WIDTH))
        positive = Signal()
        m.d.comb += [
            dx.eq(big_y >> step),
            dy.eq(big_x >> step),
            angle_read.addr.eq(Mux(self.start, 0, step + 1)),
            angle.eq(angle_read.data),
            positive.eq(~big_y[-1]),
        ]
        m.d.sync += self.done.eq(0)
        with m.If(self.start):
            m.d.sync += [
                big_x.eq(1 << 30),
                big_y.eq(self.x << c.input_shift),
                z.eq(0),
                step.eq(0),
                self.busy.eq(1),
            ]
        with m.Elif(self.busy):
            # Each is one adder with the operand complemented and a carry in: a - b is
            # a + ~b + 1 (not an adder and a subtractor and a choice between them).
            negative = ~positive
            dy_wide = Cat(dy, Const(0, 1)).as_signed()   # X >> i, non-negative
            m.d.sync += [
                big_x.eq(big_x + Mux(positive, dx, ~dx) + negative),
                big_y.eq(big_y + Mux(positive, ~dy_wide, dy_wide) + positive),
                z.eq(z + Mux(positive, angle, ~angle) + negative),
                step.eq(step + 1),
            ]
            with m.If(step == n - 1):
                m.d.sync += [self.busy.eq(0), self.done.eq(1)]
        return m

    def _elaborate_shared_shifter(self):
        """Two-cycle steps on one barrel shifter: every cycle shifts one of ``X``, ``Y`` into
        a register, every addition reads registers only.

        Two steps ``i`` (even) and ``i + 1`` take four cycles, ``p = 0 .. 3``, each shifting
        the value that is final in that cycle (``d_k`` the direction of step ``k``, ``Y_k >=
        0``)::

            p  shifter            X                     Y                      Z
            0  dx = Y_i >> i      X_i = X_(i-1) +- dx'                         Z +- A[i]
            1  dy = X_i >> i      X_(i+1) = X_i +- dx
            2  dy = X_(i+1) >> i+1                      Y_(i+1) = Y_i -+ dy
            3  dx = Y_(i+1) >> i+1                      Y_(i+2) = Y_(i+1) -+ dy  Z +- A[i+1]

        (in ``p = 0`` the last ``X`` addition of the steps before, with their direction kept
        from ``p = 3``; in ``p = 2`` ``dy`` is read before it is replaced). ``Z`` is final
        after the last step's ``p = 3``: the latency is the one of two cycles per step.
        """
        m = Module()
        c = self._cordic
        n = c.iterations
        x_bits, y_bits = state_widths(c)
        big_x = Signal(unsigned(x_bits))
        big_y = Signal(signed(y_bits))
        z = self.result
        shift = Signal(range(n))         # the step whose shifts run: i in p 0, 1; i + 1 in 2, 3
        phase = Signal(2)
        first = Signal()                 # no X addition of the steps before is pending
        kept = Signal()                  # the direction of step i + 1, for X in the next p 0
        angles = Array(Const(angle, signed(WORD_WIDTH)) for angle in c.angles)

        width = max(x_bits + 1, y_bits)
        operand = Signal(signed(width))
        m.d.comb += operand.eq(Mux(phase.matches(1, 2), big_x, big_y))
        shifted = Signal(signed(width))
        m.d.comb += shifted.eq(operand >> shift)
        dx = Signal(signed(y_bits))
        dy = Signal(unsigned(x_bits))
        positive = Signal()
        m.d.comb += positive.eq(~big_y[-1])

        m.d.sync += self.done.eq(0)
        with m.If(self.start):
            m.d.sync += [
                big_x.eq(1 << 30),
                big_y.eq(self.x << c.input_shift),
                z.eq(0),
                shift.eq(0),
                phase.eq(0),
                first.eq(1),
                self.busy.eq(1),
            ]
        with m.Elif(self.busy):
            m.d.sync += phase.eq(phase + 1)
            with m.Switch(phase):
                with m.Case(0):
                    m.d.sync += [dx.eq(shifted), first.eq(0),
                                 z.eq(Mux(positive, z + angles[shift], z - angles[shift]))]
                    with m.If(~first):
                        m.d.sync += big_x.eq(Mux(kept, big_x + dx, big_x - dx))
                with m.Case(1):
                    m.d.sync += [dy.eq(shifted), shift.eq(shift + 1),
                                 big_x.eq(Mux(positive, big_x + dx, big_x - dx))]
                with m.Case(2):
                    m.d.sync += [dy.eq(shifted),
                                 big_y.eq(Mux(positive, big_y - dy, big_y + dy))]
                with m.Case(3):
                    m.d.sync += [dx.eq(shifted), kept.eq(positive),
                                 big_y.eq(Mux(positive, big_y - dy, big_y + dy)),
                                 z.eq(Mux(positive, z + angles[shift], z - angles[shift]))]
                    with m.If(shift == n - 1):
                        m.d.sync += [self.busy.eq(0), self.done.eq(1)]
                    with m.Else():
                        m.d.sync += shift.eq(shift + 1)
        return m
