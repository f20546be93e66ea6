"""The arctangent of the friction model (eq. 20): CORDIC in vectoring mode, one step per cycle
or per two cycles (the shifts, registered, then the additions), by family (:data:`STEP_CYCLES`).

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

from amaranth.hdl import Array, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from linkdyn.model.fixedpoint import WORD_WIDTH
from linkdyn.model.tables import CORDIC, Cordic

__all__ = ["CordicArctangent", "state_widths", "STEP_CYCLES"]

#: Cycles per CORDIC step (:class:`CordicArctangent`'s ``step_cycles``) on each FPGA family the
#: project builds for, by the family names of the board tops (``BoardTop.family``) and of the
#: node benchmark (:data:`linkdyn.bench.node.FAMILIES`). ECP5: two, the registered shifts
#: meet 100 MHz on an ECP5-6; Spartan-6: one, the smaller unit (117 LUT6 less per node: the
#: <= 1,500 LUT6 node goal; whether it meets a Spartan-6 board's clock is for ISE's timing
#: report). The one definition of which family uses which.
STEP_CYCLES = {"ecp5": 2, "xc6s": 1}


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

        - 2: the barrel shifts ``Y >> i``, ``X >> i`` (and the angle ``A[i]``, the direction)
          into registers in one cycle, the three additions in the next; latency
          ``2 iterations + 1`` (49 for the default definition). One cycle for both does not
          meet 100 MHz on an ECP5.
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
        If ``step_cycles`` is not 1 or 2.
    """

    def __init__(self, cordic=CORDIC, *, step_cycles=2):
        if not isinstance(cordic, Cordic):
            raise TypeError(f"cordic must be a Cordic, not {cordic!r}")
        self._step_cycles = self.check_step_cycles(step_cycles)
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
        m = Module()
        c = self._cordic
        n = c.iterations
        x_bits, y_bits = state_widths(c)
        big_x = Signal(unsigned(x_bits))
        big_y = Signal(signed(y_bits))
        z = self.result
        step = Signal(range(n))
        angles = Array(Const(angle, signed(WORD_WIDTH)) for angle in c.angles)

        # Two-cycle steps: a shift phase, dx = Y >> i, dy = X >> i and the angle A[i] into
        # registers (and the direction), then an add phase, the three additions. One-cycle
        # steps: the same values without the registers, every busy cycle adds.
        dx = Signal(signed(y_bits))
        dy = Signal(unsigned(x_bits))
        angle = Signal(signed(WORD_WIDTH))
        positive = Signal()
        adding = Signal()  # two-cycle steps: the add phase
        shifted = [
            dx.eq(big_y >> step),
            dy.eq(big_x >> step),
            angle.eq(angles[step]),
            positive.eq(~big_y[-1]),
        ]
        if self._step_cycles == 1:
            m.d.comb += shifted
        m.d.sync += self.done.eq(0)
        with m.If(self.start):
            m.d.sync += [
                big_x.eq(1 << 30),
                big_y.eq(self.x << c.input_shift),
                z.eq(0),
                step.eq(0),
                self.busy.eq(1),
            ]
            if self._step_cycles == 2:
                m.d.sync += adding.eq(0)
        if self._step_cycles == 2:
            with m.Elif(self.busy & ~adding):
                m.d.sync += [*shifted, adding.eq(1)]
        with m.Elif(self.busy):
            m.d.sync += [
                big_x.eq(Mux(positive, big_x + dx, big_x - dx)),
                big_y.eq(Mux(positive, big_y - dy, big_y + dy)),
                z.eq(Mux(positive, z + angle, z - angle)),
                step.eq(step + 1),
            ]
            if self._step_cycles == 2:
                m.d.sync += adding.eq(0)
            with m.If(step == n - 1):
                m.d.sync += [self.busy.eq(0), self.done.eq(1)]
        return m
