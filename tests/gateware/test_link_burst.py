"""Burst frames of the neighbour link (``LinkLayer(burst > 1)``, ``docs/link.md``): several
consecutive words of one message under one start symbol, sequence number, header and CRC.

References: :func:`~linkdyn.gateware.link.burst_frame_bytes` (its CRC equal to
``amaranth.lib.crc``'s software model of CRC-16/DNP), the words as sent (exactly once, in
order, bit-exact), and the counters against the line model's flipped bits.
"""

import gc
import random
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.gateware.link import (BURST_CRC, BURST_END, BURST_START, FRAME_KINDS, MAX_BURST,
                                   LinkLayer, burst_frame_bytes, frame_bytes)
from linkdyn.sim.link_testbench import (Line, Pair, collect, read_counters, run_pair,
                                        send_items)

from support import LONG


def _messages(rng, count, direction):
    """Message-shaped traffic as a node makes it: whole messages (9 forward or 6 backward
    words, word indices 0 ..), now and then a control word (index 12) and a slot
    acknowledge between them."""
    items = []
    while len(items) < count:
        slot = rng.getrandbits(2)
        for word in range(9 if direction == 0 else 6):
            items.append({"direction": direction, "slot": slot, "word": word,
                          "data": rng.getrandbits(32)})
        if rng.random() < 0.3:
            items.append({"direction": direction, "slot": 0, "word": 12,
                          "data": rng.getrandbits(32)})
        if rng.random() < 0.3:
            items.append({"direction": direction, "slot": rng.getrandbits(2)})
    return items


def test_burst_frame_reference_has_the_catalogue_crc_and_checks_its_arguments():
    words = [(0x25, 0x12345678), (0x40, 0xFEDCBA98), (0x7F, 0)]
    chars = burst_frame_bytes(7, words)
    body = [BURST_START, 7] + [b for h, w in words for b in [h, *w.to_bytes(4, "little")]]
    assert chars[0] == (BURST_START, True) and chars[-3] == (BURST_END, True)
    assert [b for b, _ in chars[1:-3]] == body[1:]
    assert not any(k for _, k in chars[1:-3]) and not any(k for _, k in chars[-2:])
    crc = BURST_CRC(data_width=8).compute(body)
    assert chars[-2:] == [(crc & 255, False), (crc >> 8, False)]
    # CRC-16/KERMIT's catalogue check value.
    assert BURST_CRC(data_width=8).compute(b"123456789") == 0x2189
    # Start, sequence number, end and CRC: 5 characters per frame, then 5 per word.
    assert len(burst_frame_bytes(0, [(0, 1)])) == 10
    assert len(burst_frame_bytes(0, [(0, 1)] * 6)) == 35
    with pytest.raises(ValueError, match="1 .. 16"):
        burst_frame_bytes(0, [])
    with pytest.raises(ValueError, match="1 .. 16"):
        burst_frame_bytes(0, [(0, 0)] * (MAX_BURST + 1))
    with pytest.raises(ValueError, match="1 .. 16"):
        burst_frame_bytes(0, [(128, 0)])
    with pytest.raises(ValueError, match="must be a byte"):
        burst_frame_bytes(256, [(0, 0)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="Burst must be 1"):
            LinkLayer(burst=0)
        with pytest.raises(ValueError, match="at most the window"):
            LinkLayer(window=4, burst=8)
        gc.collect()


def test_burst_crc_detects_every_error_of_up_to_three_bits_in_the_longest_frame():
    """Minimum Hamming distance 4 over a 16-word burst frame's CRC'd bytes and its CRC (no 1,
    2 or 3 columns of the parity-check matrix XOR to zero): what a 16-bit CRC can give at
    this length (distance 5 ends at 241 data bits for any 16-bit polynomial). CRC-16/DNP, the
    word frames' CRC, has distance 2 at this length: the reason for a second CRC."""
    length = 2 + 5 * MAX_BURST

    def columns(parameters):
        crc = parameters(data_width=8)
        zero = crc.compute([0] * length)
        found = []
        for bit in range(8 * length):
            message = [0] * length
            message[bit // 8] |= 1 << bit % 8
            found.append(crc.compute(message) ^ zero)
        return found + [1 << i for i in range(16)]

    def distance_at_least_4(found):
        if 0 in found or len(set(found)) < len(found):
            return False
        present = set(found)
        return not any(found[i] ^ found[j] in present
                       for i in range(len(found)) for j in range(i + 1, len(found)))

    assert distance_at_least_4(columns(BURST_CRC))
    from linkdyn.gateware.link import FRAME_CRC
    assert not distance_at_least_4(columns(FRAME_CRC))


def _split(chars):
    """Frames in a character stream: burst frames (to their CRC) and the other kinds."""
    starts = {start: length for start, length in FRAME_KINDS.values()}
    frames, current, left = [], None, None
    for byte, k in chars:
        if k and byte == BURST_START:
            current, left = [(byte, True)], None
            frames.append(current)
        elif k and byte in starts:
            current, left = [(byte, True)], starts[byte] + 2
            frames.append(current)
        elif current is not None and (left is None or left > 0):
            current.append((byte, bool(k)))
            if left is not None:
                left -= 1
            elif k and byte == BURST_END:
                left = 2
    return frames


@pytest.mark.parametrize("burst", [3, 9])
def test_transmitter_fills_burst_frames_as_the_reference_says(burst):
    """Two boards, message-shaped traffic A to B: every burst frame A sends equals
    burst_frame_bytes of the words it carries, in sequence order; words offered back to back
    go in frames of up to ``burst`` words, a slot acknowledge in its own frame, and B gets
    every word once, in order."""
    pair = Pair(burst=burst)
    rng = random.Random(burst)
    items = _messages(rng, 60, 0)
    got, sent = [], []

    async def watch(ctx):
        link = pair.a._link
        async for _, _, ready, char in ctx.tick().sample(link.tx_chars.ready,
                                                         link.tx_chars.payload):
            if ready:
                sent.append((char.data, char.k))

    async def check(ctx):
        await ctx.tick().until(pair.a.status.up)
        while len(got) < len(items):
            await ctx.tick().repeat(200)

    run_pair(pair, (Line(delay=7), Line(delay=11)), [check, send_items(pair.a, items, "sync")],
             40000, background=[collect(pair.b, got, "sync"), collect(pair.a, [], "sync"),
                                watch])
    assert got == items
    words = [item for item in items if "word" in item]
    sequence_of = {}
    sequence = 0
    for item in items:
        if "word" in item:
            sequence_of[len(sequence_of)] = sequence
        sequence += 1
    bursts = [f for f in _split(sent) if f[0][0] == BURST_START]
    carried = 0
    sizes = []
    for frame in bursts:
        count = (len(frame) - 5) // 5
        sizes.append(count)
        group = words[carried:carried + count]
        assert frame == burst_frame_bytes(sequence_of[carried], [
            (w["word"] | w["slot"] << 4 | w["direction"] << 6, w["data"]) for w in group])
        carried += count
    assert carried == len(words), "each word went once (no repeats without errors)"
    assert max(sizes) == burst and min(sizes) >= 1
    slot_acks = [f for f in _split(sent) if f[0][0] == FRAME_KINDS["slot_ack"][0]]
    assert len(slot_acks) == len(items) - len(words)


@pytest.mark.parametrize("ber, bits, count", [(1e-4, 5, 600), (1e-3, 5, 200), (5e-4, 2, 200)])
def test_burst_words_arrive_once_in_order_bit_exact_with_bit_errors(ber, bits, count):
    """Message-shaped traffic both ways in bursts of 6, bit errors on both lines, random
    back-pressure at B: every word and slot acknowledge arrives exactly as sent, and the
    counters show that frames were damaged and repeated."""
    pair = Pair(bits=bits, burst=6)
    rng = random.Random(int(ber * 1e5) + bits)
    count *= 4 if LONG else 1
    forward = _messages(rng, count, 0)
    backward = _messages(rng, count // 2, 1)
    got_b, got_a = [], []
    lines = (Line(delay=9, ber=ber, seed=13), Line(delay=5, ber=ber, seed=14))
    result = {}

    async def check(ctx):
        await ctx.tick().until(pair.a.status.up)
        while len(got_b) < len(forward) or len(got_a) < len(backward):
            await ctx.tick().repeat(500)
        result["a"] = await read_counters(ctx, pair.a)
        result["b"] = await read_counters(ctx, pair.b)

    run_pair(pair, lines, [check, send_items(pair.a, forward, "sync"),
                           send_items(pair.b, backward, "sync")],
             100 * 10 // bits * count, background=[collect(pair.b, got_b, "sync",
                                                          random.Random(5)),
                                                  collect(pair.a, got_a, "sync")])
    assert got_b == forward and got_a == backward
    flipped = lines[0].flipped + lines[1].flipped
    assert flipped >= 5
    assert result["a"]["crc_errors"] + result["b"]["crc_errors"] > 0
    assert result["a"]["retransmissions"] + result["b"]["retransmissions"] > 0
    assert result["b"]["frames_received"] == len(forward)
    assert result["a"]["frames_received"] == len(backward)


def test_receiver_drops_damaged_short_and_duplicate_bursts_and_naks_a_gap():
    """Characters straight into a link layer: a burst with one wrong data byte (only the CRC
    can tell), one with a code error, one cut short by another frame are dropped; a repeat overlapping what was taken delivers only the new words; a
    burst beyond a gap is not taken and a NAK goes out; the words arrive once, in order."""
    link = LinkLayer()     # the receiver takes bursts whatever its own burst
    delivered, sent = [], []

    def burst(seq, values):
        # Word k of the stream: word index k, slot 2.
        return burst_frame_bytes(seq, [(0x20 | k, v) for k, v in
                                       enumerate(values, start=seq)])

    values = [0x1000 + k for k in range(8)]
    damaged = list(burst(0, values[:3]))
    damaged[7] = (damaged[7][0] ^ 0x04, False)
    plan = [  # (characters, code error at, delivered after, crc_errors after)
        (frame_bytes("ts", [4, 0b11, 0]), None, 0, 0),
        (damaged, None, 0, 1),
        (burst(0, values[:3]), 9, 0, 2),
        (burst(0, values[:3])[:9] + burst(0, values[:3]), None, 3, 3),
        (burst(1, values[1:5]), None, 5, 3),        # overlaps 1, 2: delivers 3, 4
        (burst(7, values[7:8]), None, 5, 3),        # gap: 5 and 6 are missing
        (burst(5, values[5:8]), None, 8, 3),
        (burst(5, values[5:8]), None, 8, 3),        # duplicate
    ]
    checks = []

    async def testbench(ctx):
        ctx.set(link.tx_chars.ready, 1)
        ctx.set(link.rx_words.ready, 1)
        for chars, error_at, want_delivered, want_errors in plan:
            for i, (byte, k) in enumerate(chars):
                ctx.set(link.rx_chars.payload, {"data": byte, "k": k,
                                                "code_error": int(i == error_at),
                                                "disparity_error": 0})
                ctx.set(link.rx_chars.valid, 1)
                await ctx.tick().until(link.rx_chars.ready)
                ctx.set(link.rx_chars.valid, 0)
                await ctx.tick()
            await ctx.tick().repeat(8)
            checks.append((len(delivered), ctx.get(link.counters.crc_errors),
                           want_delivered, want_errors))
        await ctx.tick().repeat(60)

    async def watch(ctx):
        async for _, _, valid, ready, payload, tx_valid, tx_char in ctx.tick().sample(
                link.rx_words.valid, link.rx_words.ready, link.rx_words.payload,
                link.tx_chars.valid, link.tx_chars.payload):
            if valid and ready:
                delivered.append((payload.word, payload.slot, payload.data))
            if tx_valid:
                sent.append((tx_char.data, tx_char.k))

    sim = Simulator(link)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.add_testbench(watch, background=True)
    sim.run()
    for got_delivered, got_errors, want_delivered, want_errors in checks:
        assert (got_delivered, got_errors) == (want_delivered, want_errors)
    assert delivered == [(k, 2, v) for k, v in enumerate(values)]
    acks_sent = [f for f in _split(sent)
                 if f[0][0] == FRAME_KINDS["link_ack"][0] and len(f) == 5]
    assert all(f == frame_bytes("link_ack", [f[1][0], f[2][0]]) for f in acks_sent)
    acks = [(frame[1][0], frame[2][0]) for frame in acks_sent]
    assert (5, 1) in acks                       # NAK: "send from 5 again"
    assert acks[-1] == (8, 0)
