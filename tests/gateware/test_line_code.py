"""8b/10b encoder and decoder (gateware/line_code.py) against the encdec8b10b package."""

import pytest
from amaranth.sim import Simulator
from encdec8b10b import EncDec8B10B

from linkdyn.gateware.line_code import (CONTROL_CODES, K28_5, RD_NEGATIVE, RD_POSITIVE,
                                        Decoder8b10b, Encoder8b10b, decode_table, encode)

CHARACTERS = [(False, byte) for byte in range(256)] + [(True, byte) for byte in CONTROL_CODES]


def _oracle(byte, k, rd):
    """(symbol, rd after) from encdec8b10b."""
    rd_after, symbol = EncDec8B10B.enc_8b10b(byte, rd, int(k))
    return symbol, rd_after


def _valid_symbols():
    """Per running disparity, the symbols encdec8b10b sends for the standard characters."""
    return {rd: {_oracle(byte, k, rd)[0]: (k, byte) for k, byte in CHARACTERS}
            for rd in (RD_NEGATIVE, RD_POSITIVE)}


def test_reference_encoder_equals_encdec8b10b_for_every_character_and_disparity():
    for k, byte in CHARACTERS:
        for rd in (RD_NEGATIVE, RD_POSITIVE):
            assert encode(byte, k, rd) == _oracle(byte, k, rd), (k, hex(byte), rd)
    assert encode(K28_5, True, RD_NEGATIVE)[0] == 0b0101111100       # 001111 1010, a first


def test_reference_encoder_refuses_bad_arguments():
    with pytest.raises(ValueError, match=r"K.19.2 \(0x53\) is no control symbol"):
        encode(0x53, True, RD_NEGATIVE)
    with pytest.raises(ValueError, match="Byte must be an integer 0 .. 255, not 256"):
        encode(256, False, RD_NEGATIVE)
    with pytest.raises(ValueError, match=r"Running disparity must be 0 \(RD-\) or 1"):
        encode(0, False, 2)


def test_decode_table_equals_encdec8b10b_decoder_on_every_standard_symbol():
    valid = _valid_symbols()
    table = decode_table()
    assert sum(1 for entry in table if entry[2] or entry[3]) == len(
        set(valid[RD_NEGATIVE]) | set(valid[RD_POSITIVE])) == 464
    # Symbols encdec8b10b decodes beyond the standard ones: its encodings of K with bytes that
    # are no control symbol (its table accepts any byte with ctrl=1).
    nonstandard = {_oracle(byte, True, rd)[0] for byte in range(256) if byte not in CONTROL_CODES
                   for rd in (0, 1)} - set(valid[0]) - set(valid[1])
    for symbol, (byte, k, valid_neg, valid_pos) in enumerate(table):
        assert valid_neg == (symbol in valid[RD_NEGATIVE]), hex(symbol)
        assert valid_pos == (symbol in valid[RD_POSITIVE]), hex(symbol)
        if valid_neg or valid_pos:
            assert EncDec8B10B.dec_8b10b(symbol) == (int(k), byte), hex(symbol)
        elif EncDec8B10B.dec_lookup[symbol] != "DEC8b10bERR":
            assert symbol in nonstandard, hex(symbol)


def _run(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


def test_encoder_gateware_equals_encdec8b10b_word_for_word_in_both_disparities():
    """Every character is sent once from RD- and once from RD+ (a K28.5 flips the disparity
    in between where needed); the gateware's symbols equal the package's chained encoding."""
    sequence, rd = [], RD_NEGATIVE
    for k, byte in CHARACTERS:
        for target in (RD_NEGATIVE, RD_POSITIVE):
            if rd != target:
                sequence.append((True, K28_5))
                rd ^= 1
            sequence.append((k, byte))
            rd = _oracle(byte, k, rd)[1]
    sequence.append((True, 0x53))       # no control symbol: k_error
    dut = Encoder8b10b()

    async def testbench(ctx):
        rd = RD_NEGATIVE
        for k, byte in sequence:
            ctx.set(dut.data, byte)
            ctx.set(dut.k, k)
            ctx.set(dut.en, 1)
            await ctx.tick()
            if k and byte not in CONTROL_CODES:
                assert ctx.get(dut.k_error)
                assert ctx.get(dut.symbol) == _oracle(byte, False, rd)[0]
                continue
            symbol, rd = _oracle(byte, k, rd)
            assert (ctx.get(dut.symbol), ctx.get(dut.disparity), ctx.get(dut.k_error)) == \
                (symbol, rd, 0), (k, hex(byte))
        ctx.set(dut.en, 0)
        held = ctx.get(dut.symbol)
        await ctx.tick().repeat(3)
        assert ctx.get(dut.symbol) == held

    _run(dut, testbench)


def test_decoder_gateware_flags_code_and_disparity_errors_on_every_symbol():
    """All 1024 symbols, each decoded from RD- and from RD+, against encdec8b10b."""
    valid = _valid_symbols()
    k28_5 = {rd: _oracle(K28_5, True, rd)[0] for rd in (0, 1)}
    dut = Decoder8b10b()
    seen = {"code": 0, "disparity": 0, "good": 0}

    async def decode(ctx, symbol):
        ctx.set(dut.symbol, symbol)
        ctx.set(dut.en, 1)
        await ctx.tick()
        ctx.set(dut.en, 0)
        assert ctx.get(dut.valid)
        result = (ctx.get(dut.k), ctx.get(dut.data), ctx.get(dut.code_error),
                  ctx.get(dut.disparity_error))
        await ctx.tick()
        assert not ctx.get(dut.valid)
        return result

    async def testbench(ctx):
        for rd in (RD_NEGATIVE, RD_POSITIVE):
            for symbol in range(1024):
                # K28.5 of the other disparity flips the decoder into rd.
                assert (await decode(ctx, k28_5[rd ^ 1]))[:3] == (1, K28_5, 0)
                assert ctx.get(dut.disparity) == rd
                k, byte, code_error, disparity_error = await decode(ctx, symbol)
                if symbol in valid[rd]:
                    assert (k, byte, code_error, disparity_error) == (*valid[rd][symbol], 0, 0)
                    assert ctx.get(dut.disparity) == _oracle(byte, k, rd)[1]
                    seen["good"] += 1
                elif symbol in valid[rd ^ 1]:
                    assert (k, byte, code_error, disparity_error) == \
                        (*valid[rd ^ 1][symbol], 0, 1), hex(symbol)
                    seen["disparity"] += 1
                else:
                    assert (code_error, disparity_error) == (1, 0), hex(symbol)
                    seen["code"] += 1

    _run(dut, testbench)
    good = sum(len(v) for v in valid.values())
    assert seen == {"good": good, "code": 2 * (1024 - 464), "disparity": 2 * 464 - good}
