"""The node's shared fixed-point multiply-accumulate unit (source paper Fig. 6; the fixed-point
contract of docs/architecture.md).

It executes the terms of the microprogram's dot products (:class:`linkdyn.model.microprogram.Dot`)
with exactly the arithmetic of :mod:`linkdyn.model.fixedpoint`::

    acc    = sum_k  s_k * t_k << align_k        t_k = a_k * b_k  or  a_k + b_k,  s_k = +-1
    result = floor((acc + 2**(shift - 1)) / 2**shift)       (shift 0: acc)
    word   = saturate(result) with a sticky overflow flag, or wrap(result) for phase words

Pipeline (one term per clock, every stage registered; the ``multiply`` stages are the three the
microprogram's :class:`~linkdyn.model.microprogram.MacTiming` counts)::

    inputs -> [operands] -> [partial products] -> [product] -> [accumulator] -> [round] -> saturate
               multiply 1    multiply 2            multiply 3   accumulate        round

The product of the 33-bit and the 32-bit operand is four explicit 18 x 18 signed products
(``a = a_hi 2**17 + a_lo``, ``b = b_hi 2**17 + b_lo``, ``a_lo`` and ``b_lo`` unsigned), each one
multiplier block (ECP5 MULT18X18D, Spartan-6 DSP48A1) with a register on its inputs and on its
output; the product stage adds them: ``a_hi b_hi 2**34 + a_lo b_lo`` is a concatenation (``a_lo
b_lo < 2**34``), so the sum is one wide adder after the 35-bit sum of the cross products. The
round register holds the shifted word and the saturation decision; the saturation itself is a
multiplexer behind it.

A sum term enters the multiplier as ``(a + b) * 2**align`` (the pre-adder path; its alignment
rides on the second operand), a product term is aligned after the multiplier by one of the few
*product alignments* the program uses: one datapath, one inferred multiplier (``*``), no vendor
primitive.

The rounding constant ``2**(shift - 1)`` is loaded into the accumulator with the first term of a
Dot instead of being added after the last one, which saves a wide adder in the rounding stage;
the result is the same integer.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from linkdyn.model.fixedpoint import WORD_WIDTH, ceil_log2
from linkdyn.model.microprogram import microprogram

__all__ = ["MultiplyAccumulate", "accumulator_width", "product_alignments", "term_layout",
           "result_layout"]


def product_alignments(program):
    """Return the alignments a program gives its product terms (``mul``), sorted.

    Parameters
    ----------
    program : Microprogram
        The node microprogram.

    Returns
    -------
    tuple of int
    """
    return tuple(sorted({slot.align for segment in program.segments.values()
                         for slot in segment.slots if slot.op == "term" and slot.kind == "mul"}))


def accumulator_width(word_width, aligns, product_aligns, shifts, max_terms):
    """Return the accumulator width (bits, sign included) that keeps every Dot exact.

    A product term is at most ``2**(2 * word_width - 2)`` in magnitude (the product of two most
    negative words) before its alignment, a sum term at most ``2**word_width``; a Dot has at
    most ``max_terms`` terms and the accumulator also holds the rounding constant
    ``2**(shift - 1)``.

    Parameters
    ----------
    word_width : int
        Operand width, bits (signed).
    aligns : sequence of int
        All term alignments (sum terms may use any).
    product_aligns : sequence of int
        The alignments product terms may use.
    shifts : sequence of int
        The final shifts.
    max_terms : int
        The most terms of one Dot.

    Returns
    -------
    int
        ``max(2 w - 2 + max(product_aligns), w + max(aligns)) + ceil(log2(max_terms + 1)) + 1``,
        at least wide enough to hold a shifted result and the bits that decide its saturation.
    """
    term_bits = max(2 * word_width - 2 + max(product_aligns, default=0),
                    word_width + max(aligns))
    magnitude_bits = max(term_bits, max(shifts)) + ceil_log2(max_terms + 1)
    return max(magnitude_bits + 1, max(shifts) + word_width + 1)


def term_layout(word_width, aligns, shifts, tag_width):
    """Return the layout of one MAC term (the payload of :attr:`MultiplyAccumulate.term`).

    Parameters
    ----------
    word_width : int
        Width of the signed operands, bits.
    aligns, shifts : sequence of int
        The unit's alignments and final shifts (``align`` and ``shift`` index them).
    tag_width : int
        Width of the tag, bits.

    Returns
    -------
    data.StructLayout
        ``a``, ``b`` (signed ``word_width``), ``add``, ``negate``, ``align``, ``first``,
        ``last``, ``shift``, ``wraps``, ``tag``; see :class:`MultiplyAccumulate`.
    """
    return data.StructLayout({
        "a": signed(word_width),
        "b": signed(word_width),
        "add": 1,
        "negate": 1,
        "align": range(len(aligns)),
        "first": 1,
        "last": 1,
        "shift": range(len(shifts)),
        "wraps": 1,
        "tag": tag_width,
    })


def result_layout(word_width, tag_width):
    """Return the layout of one MAC result (the payload of :attr:`MultiplyAccumulate.result`).

    Returns
    -------
    data.StructLayout
        ``data`` (signed ``word_width``: the rounded and saturated or wrapped word), ``tag``
        (``tag_width`` bits, the tag of the Dot's last term), ``overflow`` (the result
        saturated).
    """
    return data.StructLayout({"data": signed(word_width), "tag": tag_width, "overflow": 1})


class MultiplyAccumulate(wiring.Component):
    """Pipelined, exact fixed-point multiply-accumulate unit with rounding and saturation.

    One term enters per clock cycle with ``term.valid``. The terms of one Dot enter on any cycles
    in order, the first with ``first``, the last with ``last`` (a one-term Dot has both). The
    result of a Dot whose last term entered in cycle ``c`` is presented in cycle ``c + latency``
    (:attr:`latency` = 5: three multiply stages, the accumulator, the round register) with
    ``result.valid`` for one cycle; a new Dot may start in the cycle after the last term of the
    previous one. There is no back-pressure: a term presented is taken, a result presented is
    gone in the next cycle (hence plain valid/payload interfaces, not :mod:`amaranth.lib.stream`).

    Parameters
    ----------
    word_width : int
        Width of the signed operands and of the result word, bits (default 32, the node word).
    aligns : sequence of int
        Left shifts a term may be given before accumulation (default: the node microprogram's
        :attr:`~linkdyn.model.microprogram.Microprogram.aligns`). A sum term may use any of
        them, each at most ``word_width - 2`` (it is applied as the multiplier operand
        ``2**align``).
    product_aligns : sequence of int
        The subset of ``aligns`` that product terms may use (default: the ones the microprogram
        gives its products, :func:`product_alignments`); a product term with another alignment
        gives an undefined result.
    shifts : sequence of int
        Final right shifts (default: the microprogram's
        :attr:`~linkdyn.model.microprogram.Microprogram.shifts`).
    max_terms : int
        The most terms of one Dot (default: the microprogram's ``max_terms``); sizes the
        accumulator, see :func:`accumulator_width`.
    tag_width : int
        Width of the tag carried from the last term to its result (the node's destination
        address), bits.

    Members
    -------
    term : In(MultiplyAccumulate.TermSignature(term_layout(...)))
        ``valid``: a term is presented this cycle; ``payload`` (:func:`term_layout`):

        ``a``, ``b``
            The operands of the term.
        ``add``
            Sum term ``a + b`` instead of the product ``a * b``.
        ``negate``
            Subtract the term.
        ``align``
            Index into ``aligns`` of the term's left shift (for a product term, an alignment of
            ``product_aligns``).
        ``first``, ``last``
            First / last term of its Dot.
        ``shift``
            Index into ``shifts`` of the Dot's final right shift. Sampled with the first term
            (the rounding constant) and with the last term (the result): give it with both.
        ``wraps``
            Wrap the result to the word instead of saturating it (phase words); sampled with
            the last term.
        ``tag``
            Sampled with the last term, returned with the result.
    result : Out(MultiplyAccumulate.ResultSignature(result_layout(...)))
        ``valid``: ``payload`` holds a Dot's result (one cycle); ``payload``
        (:func:`result_layout`): ``data``, the rounded and saturated (or wrapped) result word;
        ``tag``, the tag of the Dot's last term; ``overflow``, the result saturated.
    overflow : Out(1)
        Sticky: some result saturated since the last ``clear_overflow``.
    clear_overflow : In(1)
        Clear ``overflow`` (a result saturating in the same cycle sets it again).

    Raises
    ------
    TypeError
        If a width or count is not an integer, or ``aligns``/``shifts`` hold non-integers.
    ValueError
        If a width or count is out of range, if ``aligns``/``shifts`` are empty or negative, if
        an alignment exceeds ``word_width - 2``, or if ``product_aligns`` is not a subset of
        ``aligns``.
    """

    class TermSignature(wiring.Signature):
        """Signature of the MAC's term input, from the issuing side.

        Parameters
        ----------
        layout : data.StructLayout
            The term (:func:`term_layout`).

        Members
        -------
        valid : Out(1)
            A term is presented this cycle.
        payload : Out(layout)
            The term.
        """

        def __init__(self, layout):
            self._layout = layout
            super().__init__({"valid": Out(1), "payload": Out(layout)})

        @property
        def layout(self):
            """data.StructLayout: the term."""
            return self._layout

    class ResultSignature(wiring.Signature):
        """Signature of the MAC's result output, from the MAC's side.

        Parameters
        ----------
        layout : data.StructLayout
            The result (:func:`result_layout`).

        Members
        -------
        valid : Out(1)
            ``payload`` holds a Dot's result (one cycle).
        payload : Out(layout)
            The result.
        """

        def __init__(self, layout):
            self._layout = layout
            super().__init__({"valid": Out(1), "payload": Out(layout)})

        @property
        def layout(self):
            """data.StructLayout: the result."""
            return self._layout

    #: Cycles from a Dot's last term entering to its result being presented (the ``multiply``,
    #: ``accumulate`` and ``round`` stages of :class:`~linkdyn.model.microprogram.MacTiming`).
    latency = 5


    def __init__(self, *, word_width=WORD_WIDTH, aligns=None, product_aligns=None, shifts=None,
                 max_terms=None, tag_width=7):
        program = microprogram()
        aligns = program.aligns if aligns is None else aligns
        product_aligns = (product_alignments(program) if product_aligns is None
                          else product_aligns)
        shifts = program.shifts if shifts is None else shifts
        max_terms = program.max_terms if max_terms is None else max_terms
        for name, value, low in (("word_width", word_width, 2), ("max_terms", max_terms, 1),
                                 ("tag_width", tag_width, 0)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an integer, not {value!r}")
            if value < low:
                raise ValueError(f"{name} must be at least {low}, not {value!r}")
        for name, values in (("aligns", aligns), ("product_aligns", product_aligns),
                             ("shifts", shifts)):
            values = tuple(values)
            if not values and name != "product_aligns":
                raise ValueError(f"{name} must not be empty")
            for value in values:
                if not isinstance(value, int) or isinstance(value, bool):
                    raise TypeError(f"{name} must hold integers, not {value!r}")
                if value < 0:
                    raise ValueError(f"{name} must hold non-negative integers, not {value!r}")
        if max(aligns) > word_width - 2:
            raise ValueError(f"aligns must be at most word_width - 2 = {word_width - 2}, "
                             f"not {max(aligns)}")
        if not set(product_aligns) <= set(aligns):
            raise ValueError(f"product_aligns {tuple(product_aligns)!r} must be a subset of "
                             f"aligns {tuple(aligns)!r}")
        self._word_width = word_width
        self._aligns = tuple(aligns)
        self._product_aligns = tuple(sorted(set(product_aligns)))
        self._shifts = tuple(shifts)
        self._max_terms = max_terms
        self._tag_width = tag_width
        self._acc_width = accumulator_width(word_width, self._aligns, self._product_aligns,
                                            self._shifts, max_terms)
        super().__init__({
            "term": In(self.TermSignature(
                term_layout(word_width, self._aligns, self._shifts, tag_width))),
            "result": Out(self.ResultSignature(result_layout(word_width, tag_width))),
            "overflow": Out(1),
            "clear_overflow": In(1),
        })

    @property
    def word_width(self):
        """int: operand and result width, bits."""
        return self._word_width

    @property
    def aligns(self):
        """tuple of int: the supported term alignments (``align`` indexes it)."""
        return self._aligns

    @property
    def product_aligns(self):
        """tuple of int: the alignments product terms may use."""
        return self._product_aligns

    @property
    def shifts(self):
        """tuple of int: the supported final shifts (``shift`` indexes it)."""
        return self._shifts

    @property
    def max_terms(self):
        """int: the most terms of one Dot."""
        return self._max_terms

    @property
    def tag_width(self):
        """int: width of the tag carried from a Dot's last term to its result, bits."""
        return self._tag_width

    @property
    def accumulator_width(self):
        """int: width of the accumulator, bits (sign included)."""
        return self._acc_width

    def elaborate(self, platform):
        m = Module()
        w = self._word_width
        acc_width = self._acc_width
        product_width = 2 * w  # |a * b| <= 2**(2w - 2), |(a + b) * 2**align| <= 2**(2w - 2)
        term = self.term.payload
        shift_shape = range(len(self._shifts))

        # Control bits travel beside the data, one register per stage.
        # Product alignments applied after the multiplier (0 for sum terms).
        post_aligns = tuple(sorted(set(self._product_aligns) | {0}))

        # -- multiply stage 1: operand registers; the pre-adder forms a + b for sum terms,
        #    whose alignment becomes the other operand 2**align --
        op_a = Signal(signed(w + 1))
        op_b = Signal(signed(w))
        sum_scale = Signal(signed(w))
        with m.Switch(term.align):
            for index, align in enumerate(self._aligns):
                with m.Case(index):
                    m.d.comb += sum_scale.eq(1 << align)
        post = Signal(range(len(post_aligns)))
        with m.Switch(term.align):
            for index, align in enumerate(self._aligns):
                if align in post_aligns and align:
                    with m.Case(index):
                        m.d.comb += post.eq(Mux(term.add, 0, post_aligns.index(align)))
        s1_valid, s1_negate, s1_first, s1_last, s1_wraps = (Signal(name=f"s1_{n}") for n in
                                                             ("valid", "negate", "first", "last",
                                                              "wraps"))
        s1_post = Signal.like(post, name="s1_post")
        s1_shift = Signal(shift_shape, name="s1_shift")
        s1_tag = Signal(self._tag_width, name="s1_tag")
        m.d.sync += [
            op_a.eq(term.a + Mux(term.add, term.b, 0)),
            op_b.eq(Mux(term.add, sum_scale, term.b)),
            s1_valid.eq(self.term.valid),
            s1_negate.eq(term.negate),
            s1_first.eq(term.first),
            s1_last.eq(term.last),
            s1_wraps.eq(term.wraps),
            s1_post.eq(post),
            s1_shift.eq(term.shift),
            s1_tag.eq(term.tag),
        ]

        # -- multiply stage 2: four 18 x 18 signed partial products, registered (the inputs are
        #    the operand registers: every multiplier block has registered inputs and output) --
        low = max(17, w - 17)  # 17 for 32-bit words: every factor fits a signed 18 bits
        a_lo = Cat(op_a[:low], Const(0, 1)).as_signed()     # unsigned, as signed low + 1 bits
        b_lo = Cat(op_b[:low], Const(0, 1)).as_signed()
        a_hi = op_a[low:].as_signed()                       # signed, w + 1 - low bits
        b_hi = op_b[low:].as_signed()                       # signed, w - low bits
        pp_ll = Signal(2 * low, name="pp_ll")               # a_lo b_lo < 2**(2 low)
        pp_lh = Signal(signed(low + 1 + len(b_hi)), name="pp_lh")
        pp_hl = Signal(signed(len(a_hi) + low + 1), name="pp_hl")
        pp_hh = Signal(signed(len(a_hi) + len(b_hi)), name="pp_hh")
        s2_valid, s2_negate, s2_first, s2_last, s2_wraps = (Signal(name=f"s2_{n}") for n in
                                                             ("valid", "negate", "first", "last",
                                                              "wraps"))
        s2_post = Signal.like(post, name="s2_post")
        s2_shift = Signal(shift_shape, name="s2_shift")
        s2_tag = Signal(self._tag_width, name="s2_tag")
        m.d.sync += [
            pp_ll.eq((a_lo * b_lo)[:2 * low]),
            pp_lh.eq(a_lo * b_hi),
            pp_hl.eq(a_hi * b_lo),
            pp_hh.eq(a_hi * b_hi),
            s2_valid.eq(s1_valid),
            s2_negate.eq(s1_negate),
            s2_first.eq(s1_first),
            s2_last.eq(s1_last),
            s2_wraps.eq(s1_wraps),
            s2_post.eq(s1_post),
            s2_shift.eq(s1_shift),
            s2_tag.eq(s1_tag),
        ]

        # -- multiply stage 3: the product register, a_hi b_hi 2**(2 low) + a_lo b_lo
        #    (concatenated) + (a_lo b_hi + a_hi b_lo) 2**low --
        product = Signal(signed(product_width))
        s3_valid, s3_negate, s3_first, s3_last, s3_wraps = (Signal(name=f"s3_{n}") for n in
                                                             ("valid", "negate", "first", "last",
                                                              "wraps"))
        s3_post = Signal.like(post, name="s3_post")
        s3_shift = Signal(shift_shape, name="s3_shift")
        s3_tag = Signal(self._tag_width, name="s3_tag")
        outer = Cat(pp_ll, pp_hh).as_signed()
        cross = Signal(signed(max(len(pp_lh), len(pp_hl)) + 1))
        m.d.comb += cross.eq(pp_lh + pp_hl)
        m.d.sync += [
            product.eq((outer + (cross << low))[:product_width]),
            s3_valid.eq(s2_valid),
            s3_negate.eq(s2_negate),
            s3_first.eq(s2_first),
            s3_last.eq(s2_last),
            s3_wraps.eq(s2_wraps),
            s3_post.eq(s2_post),
            s3_shift.eq(s2_shift),
            s3_tag.eq(s2_tag),
        ]

        # -- accumulate stage: align, negate, add to the accumulator (or the rounding constant) --
        aligned = Signal(signed(product_width + max(post_aligns)))
        with m.Switch(s3_post):
            for index, align in enumerate(post_aligns):
                with m.Case(index):
                    m.d.comb += aligned.eq(product << align)
        acc = Signal(signed(acc_width))
        base = Signal(signed(acc_width))
        with m.If(s3_first):
            with m.Switch(s3_shift):
                for index, shift in enumerate(self._shifts):
                    with m.Case(index):
                        m.d.comb += base.eq(1 << (shift - 1) if shift else 0)
        with m.Else():
            m.d.comb += base.eq(acc)
        # acc +- aligned as one adder: base + (aligned ^ n) + n, n = negate.
        inverted = Signal(signed(acc_width))
        m.d.comb += inverted.eq(aligned ^ s3_negate.replicate(acc_width).as_signed())
        s4_result = Signal()  # the accumulator holds a finished Dot
        s4_wraps = Signal()
        s4_shift = Signal(shift_shape, name="s4_shift")
        s4_tag = Signal(self._tag_width, name="s4_tag")
        with m.If(s3_valid):
            m.d.sync += acc.eq(base + inverted + s3_negate)
        m.d.sync += [
            s4_result.eq(s3_valid & s3_last),
            s4_wraps.eq(s3_wraps),
            s4_shift.eq(s3_shift),
            s4_tag.eq(s3_tag),
        ]

        # -- round stage: shift (the rounding constant is already in), saturate or wrap --
        shifted = Signal(signed(w))
        fits = Signal()
        with m.Switch(s4_shift):
            for index, shift in enumerate(self._shifts):
                with m.Case(index):
                    high = acc[shift + w - 1:]
                    m.d.comb += [
                        shifted.eq(acc[shift:shift + w]),
                        fits.eq(high.all() | ~high.any()),
                    ]
        clamp = ~fits & ~s4_wraps
        # The round register holds the shifted word and the clamp decision; the saturation
        # itself is a multiplexer behind it (it merges with whatever selects the result next,
        # e.g. a register-file write multiplexer).
        rounded = Signal(signed(w))
        clamped = Signal()
        negative = Signal()
        result_tag = Signal(self._tag_width, name="result_tag")
        result_overflow = Signal(name="result_overflow")
        m.d.sync += [
            rounded.eq(shifted),
            clamped.eq(clamp),
            negative.eq(acc[-1]),
            self.result.valid.eq(s4_result),
            result_tag.eq(s4_tag),
            result_overflow.eq(s4_result & clamp),
        ]
        saturated = Mux(negative, Const(-(1 << (w - 1)), signed(w)),
                        Const((1 << (w - 1)) - 1, signed(w)))
        m.d.comb += [
            self.result.payload.data.eq(Mux(clamped, saturated, rounded)),
            self.result.payload.tag.eq(result_tag),
            self.result.payload.overflow.eq(result_overflow),
        ]
        with m.If(self.clear_overflow):
            m.d.sync += self.overflow.eq(0)
        with m.If(s4_result & clamp):
            m.d.sync += self.overflow.eq(1)
        return m
