"""8b/10b line code: encoder and decoder with running disparity (Widmer and Franaszek, 1983).

The code maps a byte ``HGF EDCBA`` (and a control flag K) to a 10-bit symbol ``abcdei fghj``:
the five low bits go through the 5b/6b table, the three high bits through the 3b/4b table, and
the *running disparity* (RD, the sign of ones minus zeros sent so far, -1 or +1) selects
between a code and its complement, so the line stays DC-balanced (at most +-1 bit of running
disparity at a symbol boundary, runs of at most 5 equal bits). Twelve control symbols exist:
K28.0 .. K28.7, K23.7, K27.7, K29.7, K30.7; K28.5 holds the *comma* (``0011111`` or
``1100000`` at bits a .. f), a pattern no sequence of valid data symbols contains, which a
receiver uses to find the symbol boundaries.

Symbols are integers with bit 0 = ``a``, the bit sent first (the convention of the
``encdec8b10b`` package and of LiteX); :data:`RD_NEGATIVE` (0) / :data:`RD_POSITIVE` (1) are
the two running disparities.

Source: A. X. Widmer, P. A. Franaszek, "A DC-Balanced, Partitioned-Block, 8B/10B Transmission
Code", IBM J. Res. Develop. 27(5), 1983, Tables 1-3 (also IEEE 802.3 Clause 36, Tables 36-1/2).
"""

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["RD_NEGATIVE", "RD_POSITIVE", "CONTROL_CODES", "K28_5", "COMMA_PATTERNS",
           "control", "encode", "decode_table", "Encoder8b10b", "Decoder8b10b"]

RD_NEGATIVE = 0
RD_POSITIVE = 1


def control(x, y):
    """Return the byte of the control symbol K.x.y (``y << 5 | x``)."""
    return (y << 5) | x


#: Bytes of the twelve valid control symbols (K=1).
CONTROL_CODES = tuple([control(28, y) for y in range(8)]
                      + [control(x, 7) for x in (23, 27, 29, 30)])
#: The comma symbol's byte.
K28_5 = control(28, 5)
#: The 7-bit comma sequences (bits a .. g of a K28.1, K28.5 or K28.7 symbol, a first = bit 0).
COMMA_PATTERNS = (0b1111100, 0b0000011)

# 5b/6b table: code "abcdei" for RD-, a first. An unbalanced code's RD+ form is its complement;
# a balanced code is sent unchanged, except D.07 (111000 / 000111).
_6B = ["100111", "011101", "101101", "110001", "110101", "101001", "011001", "111000",
       "111001", "100101", "010101", "110100", "001101", "101100", "011100", "010111",
       "011011", "100011", "010011", "110010", "001011", "101010", "011010", "111010",
       "110011", "100110", "010110", "110110", "001110", "101110", "011110", "101011"]
_6B_K28 = "001111"
# 3b/4b table: code "fghj" when the RD before the 4b sub-block is -. Unbalanced: complement for
# RD+; balanced: unchanged except x.3 (1100 / 0011). Index 7 is the primary P7; A7 is separate.
_4B = ["1011", "1001", "0101", "1100", "1101", "1010", "0110", "1110"]
_4B_A7 = "0111"
# 3b/4b of the control symbols K.28.y (K.x.7 uses A7): RD- column, complement for RD+.
_4B_K = ["1011", "0110", "1010", "1100", "1101", "0101", "1001", "0111"]


def _bits(text):
    """``"abcdei"`` -> integer with bit 0 = the first character."""
    return sum(int(c) << i for i, c in enumerate(text))


def _ones(value):
    return bin(value).count("1")


def _sub_block(text, rd, always_alternate=False):
    """Return (code, rd after) of a sub-block whose RD- form is ``text``."""
    width = len(text)
    code = _bits(text)
    disparity = 2 * _ones(code) - width
    if disparity == 0 and not always_alternate:
        return code, rd
    if rd == RD_POSITIVE:
        code ^= (1 << width) - 1
    return code, rd if disparity == 0 else rd ^ 1


def encode(byte, k, rd):
    """Encode one byte (Python reference of the gateware, from the tables of the source).

    Parameters
    ----------
    byte : int
        0 .. 255 (``HGF EDCBA``).
    k : bool
        Control symbol; then ``byte`` must be one of :data:`CONTROL_CODES`.
    rd : int
        Running disparity before the symbol (:data:`RD_NEGATIVE` or :data:`RD_POSITIVE`).

    Returns
    -------
    (int, int)
        The 10-bit symbol (bit 0 = a) and the running disparity after it.

    Raises
    ------
    ValueError
        If ``byte`` is out of range, ``rd`` not 0 or 1, or ``k`` with a byte that is no
        control symbol.
    """
    if not isinstance(byte, int) or not 0 <= byte <= 255:
        raise ValueError(f"Byte must be an integer 0 .. 255, not {byte!r}")
    if rd not in (RD_NEGATIVE, RD_POSITIVE):
        raise ValueError(f"Running disparity must be 0 (RD-) or 1 (RD+), not {rd!r}")
    if k and byte not in CONTROL_CODES:
        raise ValueError(f"K.{byte & 31}.{byte >> 5} (0x{byte:02x}) is no control symbol; "
                         f"valid: {', '.join(f'0x{c:02x}' for c in CONTROL_CODES)}")
    x, y = byte & 31, byte >> 5
    if k and x == 28:
        code6, rd6 = _sub_block(_6B_K28, rd)
        code4, rd4 = _sub_block(_4B_K[y], rd6, always_alternate=True)
        return code6 | code4 << 6, rd4
    code6, rd6 = _sub_block(_6B[x], rd, always_alternate=(x == 7))
    if y == 7 and (k or (rd6 == RD_NEGATIVE and x in (17, 18, 20))
                   or (rd6 == RD_POSITIVE and x in (11, 13, 14))):
        code4, rd4 = _sub_block(_4B_A7, rd6)
    else:
        code4, rd4 = _sub_block(_4B[y], rd6, always_alternate=(y == 3))
    return code6 | code4 << 6, rd4


def decode_table():
    """Return the decoder's table: symbol -> ``(byte, k, valid in RD-, valid in RD+)``.

    Built by inverting :func:`encode` over every byte, both disparities and the control
    symbols, so a symbol is valid in a running disparity exactly when the encoder can send it
    there.

    Returns
    -------
    list of (int, bool, bool, bool)
        1024 entries; a symbol valid in neither disparity is ``(0, False, False, False)``.
    """
    table = [[0, False, False, False] for _ in range(1024)]
    for k, byte in [(False, b) for b in range(256)] + [(True, c) for c in CONTROL_CODES]:
        for rd in (RD_NEGATIVE, RD_POSITIVE):
            symbol, _ = encode(byte, k, rd)
            entry = table[symbol]
            assert not (entry[2] or entry[3]) or entry[:2] == [byte, k], "8b/10b table clash"
            entry[0], entry[1] = byte, k
            entry[2 + rd] = True
    return [tuple(entry) for entry in table]


class Encoder8b10b(wiring.Component):
    """8b/10b encoder with running disparity.

    Combinational tables (the 5b/6b and 3b/4b sub-block codes of the source) and a running
    disparity register; the symbol is registered.

    Members
    -------
    data : In(8)
        Byte to encode (``HGF EDCBA``).
    k : In(1)
        Send the control symbol ``data`` (one of :data:`CONTROL_CODES`).
    en : In(1)
        Encode ``data``/``k`` at this clock edge: ``symbol`` and ``disparity`` update.
    symbol : Out(10)
        The last symbol encoded, bit 0 = a (sent first). Reset: K28.5 of RD-.
    disparity : Out(1)
        Running disparity after ``symbol`` (0: RD-, 1: RD+).
    k_error : Out(1)
        ``k`` was set with a byte that is no control symbol (registered with ``symbol``; the
        symbol sent is then the data symbol of the byte).
    """

    data: In(8)
    k: In(1)
    en: In(1)
    symbol: Out(10, init=encode(K28_5, True, RD_NEGATIVE)[0])
    disparity: Out(1, init=RD_NEGATIVE)
    k_error: Out(1)

    def elaborate(self, platform):
        m = Module()
        x, y = self.data[:5], self.data[5:]
        valid_k = Signal()
        m.d.comb += valid_k.eq(self.k & Array(Const(int(c in CONTROL_CODES))
                                              for c in range(256))[self.data])
        k28 = valid_k & (x == 28)

        # 5b/6b: RD- code, whether it is unbalanced, whether it alternates anyway (D.07).
        code6_neg = Signal(6)
        unbalanced6 = Signal()
        m.d.comb += [
            code6_neg.eq(Mux(k28, _bits(_6B_K28), Array(Const(_bits(c), 6) for c in _6B)[x])),
            unbalanced6.eq(Mux(k28, 1, Array(Const(int(_ones(_bits(c)) != 3)) for c in _6B)[x])),
        ]
        alternate6 = unbalanced6 | (~k28 & (x == 7))
        rd = self.disparity
        code6 = Mux(alternate6 & rd, ~code6_neg, code6_neg)
        rd6 = Signal()
        m.d.comb += rd6.eq(rd ^ unbalanced6)

        # 3b/4b: primary, A7 or the K28 table.
        use_a7 = (y == 7) & (valid_k | (~rd6 & ((x == 17) | (x == 18) | (x == 20)))
                             | (rd6 & ((x == 11) | (x == 13) | (x == 14))))
        code4_neg = Signal(4)
        m.d.comb += code4_neg.eq(
            Mux(k28, Array(Const(_bits(c), 4) for c in _4B_K)[y],
                Mux(use_a7, _bits(_4B_A7), Array(Const(_bits(c), 4) for c in _4B)[y])))
        unbalanced4 = Signal()
        m.d.comb += unbalanced4.eq(code4_neg.xor())    # 1 or 3 ones
        alternate4 = unbalanced4 | k28 | (y == 3)
        code4 = Mux(alternate4 & rd6, ~code4_neg, code4_neg)

        with m.If(self.en):
            m.d.sync += [
                self.symbol.eq(Cat(code6, code4)),
                self.disparity.eq(rd6 ^ unbalanced4),
                self.k_error.eq(self.k & ~valid_k),
            ]
        return m


class Decoder8b10b(wiring.Component):
    """8b/10b decoder with running disparity and error flags.

    A 1024-entry ROM (:func:`decode_table`, a block RAM with a synchronous read port) gives
    each symbol's byte, K flag and the disparities it is valid in; the running disparity
    follows the symbols received (an unbalanced symbol sets it from its own sign, also after an
    error, so the decoder resynchronises by itself).

    Members
    -------
    symbol : In(10)
        Symbol received, bit 0 = a.
    en : In(1)
        Decode ``symbol``: the outputs below change in the next cycle, with ``valid``.
    valid : Out(1)
        One-cycle pulse: ``data``, ``k``, ``code_error``, ``disparity_error`` are the decoded
        symbol.
    data : Out(8)
        Decoded byte (0 on a code error).
    k : Out(1)
        Control symbol.
    code_error : Out(1)
        The symbol is valid in neither running disparity (code violation).
    disparity_error : Out(1)
        The symbol is valid, but only in the other running disparity.
    disparity : Out(1)
        Running disparity after the symbol (0: RD-, 1: RD+).
    """

    symbol: In(10)
    en: In(1)
    valid: Out(1)
    data: Out(8)
    k: Out(1)
    code_error: Out(1)
    disparity_error: Out(1)
    disparity: Out(1, init=RD_NEGATIVE)

    def elaborate(self, platform):
        m = Module()
        rom_init = [byte | int(k) << 8 | int(neg) << 9 | int(pos) << 10
                    for byte, k, neg, pos in decode_table()]
        m.submodules.rom = rom = Memory(shape=11, depth=1024, init=rom_init)
        read = rom.read_port()
        m.d.comb += [read.addr.eq(self.symbol), read.en.eq(self.en)]

        # The symbol's own disparity, registered next to the ROM read.
        ones = Signal(range(11))
        m.d.comb += ones.eq(sum(self.symbol[i] for i in range(10)))
        heavy = Signal()    # more ones than zeros: RD+ afterwards
        light = Signal()    # more zeros: RD- afterwards
        m.d.sync += self.valid.eq(self.en)
        with m.If(self.en):
            m.d.sync += [heavy.eq(ones > 5), light.eq(ones < 5)]

        valid_neg, valid_pos = read.data[9], read.data[10]
        valid_here = Mux(self.disparity, valid_pos, valid_neg)
        m.d.comb += [
            self.code_error.eq(self.valid & ~valid_neg & ~valid_pos),
            self.disparity_error.eq(self.valid & (valid_neg | valid_pos) & ~valid_here),
            self.data.eq(read.data[:8]),
            self.k.eq(read.data[8]),
        ]
        with m.If(self.valid):
            with m.If(heavy):
                m.d.sync += self.disparity.eq(RD_POSITIVE)
            with m.Elif(light):
                m.d.sync += self.disparity.eq(RD_NEGATIVE)
            with m.Elif(~valid_here & (valid_neg ^ valid_pos)):
                # A balanced symbol of one disparity only (D.07 or x.3 forms): follow it.
                m.d.sync += self.disparity.eq(valid_pos)
        return m
