"""The quarter-wave sine table: phase word in, the six interpolation operands out.

Bit-exact with :meth:`linkdyn.model.tables.SineTable.lookup` (source paper Sect. 3.1; the
fixed-point contract of docs/architecture.md): the phase word ``[31:30] quadrant, [29:f] index, [f-1:0] fraction`` (``f`` =
``fraction_bits``) is mirrored for quadrants 1 and 3 (``v = 2**30 - u``), the table is read at
``k = v >> f`` and ``k + 1``, the entry ``T[size]`` (full scale, not stored) is produced by the
address decoder, the difference is zero when ``k = size``, and quadrants 2 and 3 negate. The
cosine is the sine of ``phase + 2**30``.

The table is one :class:`amaranth.lib.memory.Memory` (the default 512 x 31 bits: one Spartan-6
RAMB16 as 512 x 36, or one ECP5 DP16KD) with two synchronous read ports; the sine operands are
read in one cycle, the cosine operands in the next, through the same logic. The table's outputs
are registered before any logic uses them (a block RAM's clock-to-output delay leaves no time
for the negation and the difference in the same cycle).
"""

from amaranth.hdl import Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from linkdyn.model.tables import SINE_TABLE, SineTable

__all__ = ["SineCosineLookup", "ADDRESS_REGISTER"]

#: Whether the table's addresses come from registers (loaded a cycle ahead) rather than from
#: the mirroring adder, by the Amaranth platform's ``family`` (``True`` for any other platform
#: and in simulation): on ECP5 the 4,096-entry table is seven block RAMs apart and the adder's
#: carry chain before their address pins set the 6-node build's Fmax (86.4 MHz with it, 98.3
#: MHz without, docs/performance.md); the LUT-bound XC6SLX9 keeps the adder (the registered
#: version costs 33 LUT6 there, for its 30-bit source multiplexer). Same words, same latency.
ADDRESS_REGISTER = {"spartan6": False}


class SineCosineLookup(wiring.Component):
    """Sine/cosine interpolation operands of a phase word, from a quarter-wave block-RAM table.

    A ``start`` in cycle ``c`` samples ``phase``; the outputs hold the operands of that phase
    from cycle ``c + latency`` (:attr:`latency` = 5), when ``done`` pulses, until the next
    ``start``. ``start`` may come at most every :attr:`latency` cycles. The sine outputs change
    in cycle ``c + 4``, the cosine outputs in cycle ``c + 5``; the fractions in cycles ``c + 2``
    and ``c + 3``.

    Parameters
    ----------
    table : SineTable
        The table definition (default :data:`linkdyn.model.tables.SINE_TABLE`).
    address_register : bool, optional
        Address the table from registers loaded a cycle ahead (``True``) or from the
        mirroring adder (``False``); default by the platform's family
        (:data:`ADDRESS_REGISTER`). The outputs and their timing are the same.

    Members
    -------
    start : In(1)
        Sample ``phase`` and start a lookup.
    phase : In(signed(32))
        Phase word, ``2**32`` per turn.
    sin_base, cos_base : Out(signed(table.entry_bits + 1))
        ``+-T[k]``.
    sin_delta, cos_delta : Out(signed(table.entry_bits + 1))
        ``+-(T[k+1] - T[k])``, zero when ``k = table.size``.
    sin_fraction, cos_fraction : Out(table.fraction_bits)
        The unsigned interpolation fraction.
    done : Out(1)
        Pulses in the first cycle all six outputs hold the result.

    Raises
    ------
    TypeError
        If ``table`` is not a :class:`~linkdyn.model.tables.SineTable`.
    """

    #: Cycles from ``start`` to ``done`` (all outputs valid).
    latency = 5

    def __init__(self, table=SINE_TABLE, *, address_register=None):
        if not isinstance(table, SineTable):
            raise TypeError(f"table must be a SineTable, not {table!r}")
        if address_register is not None and not isinstance(address_register, bool):
            raise TypeError(f"address_register must be True, False or None, not "
                            f"{address_register!r}")
        self._table = table
        self._address_register = address_register
        entry = signed(table.entry_bits + 1)
        super().__init__({
            "start": In(1),
            "phase": In(signed(32)),
            "sin_base": Out(entry),
            "sin_delta": Out(entry),
            "sin_fraction": Out(table.fraction_bits),
            "cos_base": Out(entry),
            "cos_delta": Out(entry),
            "cos_fraction": Out(table.fraction_bits),
            "done": Out(1),
        })

    @property
    def table(self):
        """SineTable: the table definition."""
        return self._table

    def elaborate(self, platform):
        m = Module()
        t = self._table
        quarter_bits = t.index_bits + t.fraction_bits  # bits of u, the position in a quadrant

        m.submodules.memory = memory = Memory(shape=unsigned(t.entry_bits), depth=t.size,
                                              init=t.memory_init())
        port_k = memory.read_port()
        port_next = memory.read_port()

        # The phase is sampled; the sine is addressed in the next cycle, the cosine (the sine of
        # phase + 2**30: quadrant + 1) in the one after, at v and v_next.
        # The table's words are registered one cycle after they are read, then negated and
        # differenced.
        u = Signal(quarter_bits)
        quadrant = Signal(2)
        address_sin = Signal()
        address_cos = Signal()
        fetch_sin = Signal()
        fetch_cos = Signal()
        latch_sin = Signal()
        latch_cos = Signal()
        m.d.sync += [
            address_sin.eq(self.start),
            address_cos.eq(address_sin),
            fetch_sin.eq(address_sin),
            fetch_cos.eq(address_cos),
            latch_sin.eq(fetch_sin),
            latch_cos.eq(fetch_cos),
            self.done.eq(latch_cos),
        ]
        with m.If(self.start):
            m.d.sync += [u.eq(self.phase[:quarter_bits]), quadrant.eq(self.phase[quarter_bits:])]

        # Quadrant rule: mirror (v = 2**30 - u) in quadrants 1 and 3, negate in 2 and 3.
        # The cosine's quadrant is quadrant + 1: it mirrors when the sine does not.
        negate = Mux(address_sin, quadrant[1], quadrant[1] ^ quadrant[0])
        # 2**30 - u = (~u) + 1 over the 30 bits of u, carrying into bit 30 when u = 0.
        # v_next = v + 2**fraction_bits, whose top bits are k + 1: from u by one adder, beside
        # v's (not after it), so that both table addresses are one carry chain from u.
        v = Signal(quarter_bits + 1)
        v_next = Signal(quarter_bits + 1)
        registered = self._address_register
        if registered is None:
            registered = ADDRESS_REGISTER.get(getattr(platform, "family", None), True)
        if registered:
            # The addresses come from registers: v and v_next are computed a cycle ahead, the
            # sine's from the phase word in the cycle of ``start``, the cosine's from u in the
            # sine's address cycle, so that no carry chain comes before the block RAMs'
            # address pins (a 4,096-entry table is several block RAMs apart).
            source = Mux(self.start, self.phase[:quarter_bits], u)
            mirror = Mux(self.start, self.phase[quarter_bits], ~quadrant[0])
        else:
            # The addresses from the adder, in the address cycle.
            source = u
            mirror = Mux(address_sin, quadrant[0], ~quadrant[0])
        mirrored = source ^ mirror.replicate(quarter_bits)
        update = [v.eq(mirrored + mirror),
                  v_next.eq(mirrored + (mirror | Const(1 << t.fraction_bits,
                                                      t.fraction_bits + 1)))]
        if registered:
            with m.If(self.start | address_sin):
                m.d.sync += update
        else:
            m.d.comb += update
        k = v[t.fraction_bits:]  # 0 .. size
        m.d.comb += [
            port_k.addr.eq(k),
            port_next.addr.eq(v_next[t.fraction_bits:]),
        ]
        # Address decoder, registered beside the read and once more beside the word register:
        # T[size] is full scale (k = size exactly when v = 2**30); T[k+1] is full scale for
        # k >= size - 1 (so the difference is 0 at k = size).
        k_full = Signal()
        next_full = Signal()
        negative = Signal()
        word_k = Signal(t.entry_bits)
        word_next = Signal(t.entry_bits)
        word_k_full = Signal()
        word_next_full = Signal()
        word_negative = Signal()
        m.d.sync += [
            k_full.eq(v[quarter_bits]),
            next_full.eq(v[quarter_bits] | k[:t.index_bits].all()),
            negative.eq(negate),
            word_k.eq(port_k.data),
            word_next.eq(port_next.data),
            word_k_full.eq(k_full),
            word_next_full.eq(next_full),
            word_negative.eq(negative),
        ]
        with m.If(address_sin):
            m.d.sync += self.sin_fraction.eq(v[:t.fraction_bits])
        with m.If(address_cos):
            m.d.sync += self.cos_fraction.eq(v[:t.fraction_bits])

        # Signed operands: base = +-T[k] = (T ^ n) + n, delta = +-(T[k+1] - T[k])
        # = (T[k+1] ^ n) - (T[k] ^ n), with n = all ones when negative.
        entry = Mux(word_k_full, t.full_scale, word_k)
        entry_next = Mux(word_next_full, t.full_scale, word_next)
        ones = word_negative.replicate(t.entry_bits + 1)
        flipped = Signal(signed(t.entry_bits + 1))
        flipped_next = Signal(signed(t.entry_bits + 1))
        m.d.comb += [
            flipped.eq((entry ^ ones).as_signed()),
            flipped_next.eq((entry_next ^ ones).as_signed()),
        ]
        base = flipped + word_negative
        delta = flipped_next - flipped
        with m.If(latch_sin):
            m.d.sync += [self.sin_base.eq(base), self.sin_delta.eq(delta)]
        with m.If(latch_cos):
            m.d.sync += [self.cos_base.eq(base), self.cos_delta.eq(delta)]
        return m
