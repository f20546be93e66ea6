"""Neighbour link (gateware/link.py): two links joined by a line model in the Amaranth simulator.

The line model (:class:`Line`) carries each direction's bits with a delay, flips bits at a
given bit-error rate and cuts the line (constant 0) between given cycles; it counts the bits it
flipped, the independent record the link's counters are checked against. Words are random
(fixed seeds); the reference is the list of words sent: every word must arrive exactly once, in
order, bit-exact.
"""

import itertools
import os
import random

import pytest
from amaranth import Elaboratable, Module
from amaranth.sim import Simulator

from linkdyn.gateware.line_code import CONTROL_CODES
from linkdyn.gateware.link import (CRC_BYTES, FRAME_CRC, FRAME_KINDS, IDLE, LinkLayer,
                                   NeighbourLink, ReceivePHY, TransmitPHY, frame_bytes)
from linkdyn.sim.link_testbench import (Line, Pair, collect, random_words, read_counters,
                                        run_pair, send_items, watch_up)

LONG = bool(os.environ.get("LINKDYN_LONG"))
pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


# ---- Reference checks of the frame format and the CRC choice ---------------------------------

def test_crc16_dnp_reference_has_its_catalogue_check_value():
    from linkdyn.gateware.link import _crc16_dnp
    assert _crc16_dnp(b"123456789") == 0xEA82       # CRC catalogue check value of CRC-16/DNP
    # amaranth.lib.crc's software model of the same algorithm agrees on a frame's CRC word.
    message = [0xFB, 0x35, 0x07, 0x78, 0x56, 0x34, 0x12]
    assert FRAME_CRC(data_width=8).compute(message) == _crc16_dnp(message)
    word = sum(b << 8 * i for i, b in enumerate(message))
    assert FRAME_CRC(data_width=8 * CRC_BYTES).compute([word]) == _crc16_dnp(message)


def test_frame_crc_detects_every_error_of_up_to_five_bits():
    """Minimum Hamming distance 6 over the 56 CRC'd bits and 16 CRC bits (the reason for
    CRC-16/DNP; CRC-16/CCITT has 4 there): no <= 5 columns of the parity-check matrix XOR to
    zero."""
    def syndrome(position):
        message = [0] * CRC_BYTES
        message[position // 8] = 1 << (position % 8)
        from linkdyn.gateware.link import _crc16_dnp
        return _crc16_dnp(message) ^ _crc16_dnp([0] * CRC_BYTES)
    columns = [syndrome(i) for i in range(8 * CRC_BYTES)] + [1 << i for i in range(16)]
    assert 0 not in columns and len(set(columns)) == len(columns)
    pairs = {}
    for a, b in itertools.combinations(range(len(columns)), 2):
        value = columns[a] ^ columns[b]
        assert value not in pairs, "weight-4 codeword"
        pairs[value] = {a, b}
    assert not any(column in pairs for column in columns), "weight-3 codeword"
    for triple in itertools.combinations(range(len(columns)), 3):
        value = columns[triple[0]] ^ columns[triple[1]] ^ columns[triple[2]]
        assert value not in pairs or pairs[value] & set(triple), "weight-5 codeword"


def test_frame_reference_encoder_and_its_errors():
    chars = frame_bytes("word", [0x35, 0x07, 0x78, 0x56, 0x34, 0x12])
    assert chars[0] == (FRAME_KINDS["word"][0], True) and len(chars) == 9
    assert all(not k for _, k in chars[1:])
    assert all(start in CONTROL_CODES and start != IDLE for start, _ in FRAME_KINDS.values())
    with pytest.raises(ValueError, match="A ts frame has 3 payload bytes"):
        frame_bytes("ts", [1])
    with pytest.raises(ValueError, match="Frame kind must be one of"):
        frame_bytes("hello", [])


@pytest.mark.parametrize("make, match", [
    (lambda: LinkLayer(window=12), "Window must be a power of 2, not 12"),
    (lambda: LinkLayer(window=128), "Window must be 2 .. 64, not 128"),
    (lambda: LinkLayer(ack_timeout=4), "Acknowledge timeout must be 16 .. "),
    (lambda: TransmitPHY(3), r"Bits per cycle must divide a 10-bit symbol \(1, 2, 5 or 10\)"),
    (lambda: ReceivePHY(4), "Bits per cycle must divide"),
    (lambda: NeighbourLink(bits=10), "Bits per cycle must be 1, 2 or 5 for a NeighbourLink"),
])
def test_components_check_their_parameters(make, match):
    with pytest.raises(ValueError, match=match):
        make()
    with pytest.raises(TypeError, match="Down timeout must be an integer"):
        LinkLayer(down_timeout=2.5)


def test_transmitter_sends_frames_as_the_reference_encoder_says():
    """The characters of the link layer's word frames equal :func:`frame_bytes`."""
    link = LinkLayer()
    sent = []
    words = [(0, 1, 7, 0x12345678), (1, 3, 5, 0xFEDCBA98), (0, 0, 0, 0)]

    async def testbench(ctx):
        # Bring the link up by hand: feed it a good training frame that says "I hear you".
        ctx.set(link.tx_chars.ready, 1)
        for byte, k in frame_bytes("ts", [3, 0b11, 0]):
            ctx.set(link.rx_chars.payload, {"data": byte, "k": k, "code_error": 0,
                                            "disparity_error": 0})
            ctx.set(link.rx_chars.valid, 1)
            await ctx.tick().until(link.rx_chars.ready)
        ctx.set(link.rx_chars.valid, 0)
        await ctx.tick().repeat(3)
        assert ctx.get(link.status.up) and ctx.get(link.status.neighbour_index) == 3
        for direction, slot, word, value in words:
            ctx.set(link.tx_words.payload, {"direction": direction, "slot": slot, "word": word,
                                            "data": value})
            ctx.set(link.tx_words.valid, 1)
            await ctx.tick().until(link.tx_words.ready)
        ctx.set(link.tx_words.valid, 0)
        ctx.set(link.tx_slot_acks.payload, {"direction": 1, "slot": 2})
        ctx.set(link.tx_slot_acks.valid, 1)
        await ctx.tick().until(link.tx_slot_acks.ready)
        ctx.set(link.tx_slot_acks.valid, 0)
        await ctx.tick().repeat(200)

    async def watch(ctx):
        async for _, _, valid, ready, char in ctx.tick().sample(
                link.tx_chars.valid, link.tx_chars.ready, link.tx_chars.payload):
            if valid and ready:
                sent.append((char.data, char.k))

    sim = Simulator(link)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.add_testbench(watch, background=True)
    sim.run()
    frames = _split_frames(sent)
    want = [frame_bytes("word", [(w & 15) | s << 4 | d << 6, seq, *v.to_bytes(4, "little")])
            for seq, (d, s, w, v) in enumerate(words)]
    want.append(frame_bytes("slot_ack", [1 << 6 | 2 << 4, len(words)]))
    assert [f for f in frames if f[0][0] in (FRAME_KINDS["word"][0],
                                              FRAME_KINDS["slot_ack"][0])] == want
    ts = [f for f in frames if f[0][0] == FRAME_KINDS["ts"][0]]
    # Index 0, not valid (board_index_valid is 0); fresh until up; "hears" once the training
    # frame came in; oldest unacknowledged sequence number 0 (no link_ack was fed).
    assert ts[0] == frame_bytes("ts", [0, 0b100, 0])
    assert ts[-1] == frame_bytes("ts", [0, 0b010, 0])
    assert all(f in (ts[0], frame_bytes("ts", [0, 0b110, 0]), ts[-1]) for f in ts)


def _split_frames(chars):
    frames, current = [], None
    starts = {start: length for start, length in FRAME_KINDS.values()}
    for byte, k in chars:
        if k and byte in starts:
            current = [(byte, k)]
            frames.append(current)
        elif current is not None and not k:
            current.append((byte, k))
    # The last one may be cut short by the end of the simulation.
    return [f for f in frames if len(f) == starts[f[0][0]] + 3]


# ---- Two boards joined by a line model (linkdyn.sim.link_testbench) ------------------------------


def test_link_up_assigns_board_indices_and_carries_words_both_ways():
    pair = Pair()
    rng = random.Random(1)
    forward = random_words(rng, 60, 0) + [{"direction": 0, "slot": 1}]
    backward = random_words(rng, 40, 1) + [{"direction": 1, "slot": 3}]
    got_b, got_a, log = [], [], []
    result = {}

    async def check(ctx):
        await ctx.tick().until(pair.a.status.up & pair.b.status.up)
        result["up_at"] = log[-1][0]
        await ctx.tick().repeat(10)
        result["a_sees"] = ctx.get(pair.a.status.neighbour_index)
        result["b_sees"] = ctx.get(pair.b.status.neighbour_index)
        result["b_valid"] = ctx.get(pair.b.status.neighbour_index_valid)
        await ctx.tick().repeat(6000)
        result["a"] = await read_counters(ctx, pair.a)
        result["b"] = await read_counters(ctx, pair.b)

    run_pair(pair, (Line(delay=7), Line(delay=11)),
             [check, send_items(pair.a, forward, "sync"), send_items(pair.b, backward, "sync")],
             12000, background=[collect(pair.b, got_b, "sync", random.Random(2)),
                                collect(pair.a, got_a, "sync"), watch_up(pair.a, log, "sync")])
    assert result["b_sees"] == 0 and result["b_valid"] == 1
    assert result["a_sees"] == 1                    # B took A's index + 1 and says so
    assert result["up_at"] < 300
    assert got_b == forward and got_a == backward
    for side, sent, received in (("a", forward, backward), ("b", backward, forward)):
        counters = result[side]
        assert counters["frames_sent"] == len(sent), side
        assert counters["frames_received"] == len(received), side
        assert counters["crc_errors"] == counters["retransmissions"] == 0, side
        assert counters["link_drops"] == 0, side


@pytest.mark.parametrize("two_clocks, bits, count", [(False, 5, 800), (True, 2, 300)])
def test_every_word_arrives_once_in_order_bit_exact_at_ber_1e_4(two_clocks, bits, count):
    """Bit errors at 1e-4 both ways; the words still arrive exactly as sent, and the counters
    show that frames were really damaged and repeated. One clock and 5 bits per cycle (a
    symbol every 2 cycles: more words per simulated cycle), and two clocks 0.3 % apart with
    the DDR width (the clock-domain crossing)."""
    pair = Pair(two_clocks=two_clocks, bits=bits)
    rng = random.Random(10 + two_clocks)
    count *= 4 if LONG else 1
    forward = random_words(rng, count, 0)
    backward = random_words(rng, count // 2, 1)
    got_b, got_a = [], []
    lines = (Line(delay=9, ber=1e-4, seed=3), Line(delay=5, ber=1e-4, seed=4))
    result = {}
    a, b = ("a", "b") if two_clocks else ("sync", "sync")

    async def check(ctx):
        await ctx.tick(a).until(pair.a.status.up)
        while len(got_b) < len(forward) or len(got_a) < len(backward):
            await ctx.tick(a).repeat(500)
        result["a"] = await read_counters(ctx, pair.a)
        result["b"] = await read_counters(ctx, pair.b)

    run_pair(pair, lines, [check, send_items(pair.a, forward, a),
                           send_items(pair.b, backward, b)],
             30 * 10 // bits * count, background=[collect(pair.b, got_b, b, random.Random(5)),
                                                  collect(pair.a, got_a, a)])
    assert got_b == forward and got_a == backward
    flipped = lines[0].flipped + lines[1].flipped
    damaged = result["a"]["crc_errors"] + result["b"]["crc_errors"]
    repeated = result["a"]["retransmissions"] + result["b"]["retransmissions"]
    assert flipped >= 5
    # A flipped bit damages one frame, or two when the disparity error it causes shows in the
    # next symbol, which belongs to the next frame.
    assert 0 < damaged <= 2 * flipped
    assert repeated > 0
    assert result["b"]["frames_received"] == len(forward)
    assert result["a"]["frames_sent"] == len(forward) + result["a"]["retransmissions"]


def test_a_cut_is_reported_no_wrong_word_is_delivered_and_the_link_resumes():
    pair = Pair()
    rng = random.Random(20)
    forward = random_words(rng, 250, 0)
    got_b, log_a, log_b = [], [], []
    cut = (3000, 5000)
    lines = (Line(delay=9, cuts=[cut], seed=6), Line(delay=9, seed=7))
    down_timeout = 256
    result = {}

    async def check(ctx):
        await ctx.tick().until(pair.a.status.up)
        while len(got_b) < len(forward):
            await ctx.tick().repeat(100)
        result["a"] = await read_counters(ctx, pair.a)
        result["b"] = await read_counters(ctx, pair.b)

    async def slow_send(ctx):
        # Words spread over the cut: one every 30 cycles.
        for item in forward:
            ctx.set(pair.a.tx_words.payload, item)
            ctx.set(pair.a.tx_words.valid, 1)
            await ctx.tick().until(pair.a.tx_words.ready)
            ctx.set(pair.a.tx_words.valid, 0)
            await ctx.tick().repeat(30)

    async def prefix(ctx):
        async for _ in ctx.tick().sample():
            assert got_b == forward[:len(got_b)], "a wrong word was delivered"

    run_pair(pair, lines, [check, slow_send], 20000,
              background=[collect(pair.b, got_b, "sync"), watch_up(pair.a, log_a, "sync"),
                          watch_up(pair.b, log_b, "sync"), prefix])
    assert got_b == forward
    # B hears nothing from the cut on: down within the timeout (plus the line delay and the
    # decoder pipeline); A learns it from B's training frames.
    downs_b = [c for c, up in log_b if not up and c > 0]
    downs_a = [c for c, up in log_a if not up and c > 0]
    assert len(downs_b) == 1 and cut[0] < downs_b[0] <= cut[0] + down_timeout + 40
    assert len(downs_a) == 1 and downs_a[0] <= downs_b[0] + 200
    ups_b = [c for c, up in log_b if up]
    assert ups_b[-1] > cut[1] and ups_b[-1] < cut[1] + 500
    assert result["a"]["link_drops"] == result["b"]["link_drops"] == 1
    assert result["a"]["retransmissions"] > 0


@pytest.mark.parametrize("seed", [30, 31] if LONG else [30])
def test_random_bits_into_a_receiver_deliver_nothing_and_change_no_state(seed):
    """B receives random bits (and A nothing) for a while: B delivers nothing, never hears,
    its sequence state stays; then the real signal comes: the link comes up and words flow
    (the receiver did not hang)."""
    pair = Pair()
    got_b, got_a = [], []
    garbage = 60000 if LONG else 8000
    lines = (Line(noise=[(0, garbage)], seed=seed), Line(delay=3, cuts=[(0, garbage)]))
    words = random_words(random.Random(seed), 20, 0)
    result = {}

    async def check(ctx):
        await ctx.tick().repeat(garbage)
        result["b"] = await read_counters(ctx, pair.b)
        result["status"] = {name: ctx.get(getattr(pair.b.status, name)) for name in (
            "up", "hears", "outstanding", "rx_sequence")}
        result["delivered"] = len(got_b) + len(got_a)
        await ctx.tick().until(pair.a.status.up & pair.b.status.up)
        result["up_after"] = await read_counters(ctx, pair.b)
        await send_items(pair.a, words, "sync")(ctx)
        while len(got_b) < len(words):
            await ctx.tick().repeat(50)

    async def never_hears_garbage(ctx):
        cycle = 0
        async for _, _, up, hears in ctx.tick().sample(pair.b.status.up, pair.b.status.hears):
            assert cycle > garbage or not (up or hears), f"B heard noise at cycle {cycle}"
            cycle += 1

    run_pair(pair, lines, [check], garbage + 3000,
             background=[collect(pair.b, got_b, "sync"), collect(pair.a, got_a, "sync"),
                         never_hears_garbage])
    assert result["delivered"] == 0
    assert result["status"] == {"up": 0, "hears": 0, "outstanding": 0, "rx_sequence": 0}
    assert result["b"]["frames_received"] == 0 and result["b"]["link_drops"] == 0
    assert result["b"]["crc_errors"] > 0        # it did see frame starts in the noise
    assert got_b == words


def test_receiver_drops_damaged_duplicate_and_early_frames_and_naks_a_gap():
    """Characters straight into the link layer: a frame with one wrong byte (valid symbols, so
    only the CRC can tell), a code error, a frame cut short, a duplicate and a frame after a gap
    are not delivered; a NAK asks for the missing one; the good frames arrive once, in order."""
    link = LinkLayer()
    delivered, acks_sent = [], []

    def word_frame(seq, value, header=0x25):
        return frame_bytes("word", [header, seq, *value.to_bytes(4, "little")])

    good = [word_frame(seq, 0x1000 + seq) for seq in range(3)]
    damaged = list(good[0])
    damaged[4] = (damaged[4][0] ^ 0x10, False)
    plan = [  # (characters, code error at index, expected delivered count after, crc_errors)
        (frame_bytes("ts", [4, 0b11, 0]), None, 0, 0),
        (damaged, None, 0, 1),
        (good[0], 5, 0, 2),                     # a code error on its 6th character
        (good[0][:5] + good[1], None, 0, 3),    # cut short by the next frame (gap: seq 1)
        (good[0], None, 1, 3),
        (good[0], None, 1, 3),                  # duplicate
        (good[2], None, 1, 3),                  # gap: 1 is missing
        (good[1], None, 2, 3),
        (good[2], None, 3, 3),
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
            await ctx.tick().repeat(4)
            checks.append((len(delivered), ctx.get(link.counters.crc_errors),
                           want_delivered, want_errors))
        await ctx.tick().repeat(60)

    async def watch(ctx):
        chars = []
        async for _, _, valid, payload, tx_valid, tx_char in ctx.tick().sample(
                link.rx_words.valid, link.rx_words.payload, link.tx_chars.valid,
                link.tx_chars.payload):
            if valid:
                delivered.append(payload.data)
            if tx_valid:
                chars.append((tx_char.data, tx_char.k))
                frames = _split_frames(chars)
                if frames and frames[-1][0][0] == FRAME_KINDS["link_ack"][0] and (
                        not acks_sent or acks_sent[-1] is not frames[-1]):
                    acks_sent.append(frames[-1])

    sim = Simulator(link)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.add_testbench(watch, background=True)
    sim.run()
    for got_delivered, got_errors, want_delivered, want_errors in checks:
        assert (got_delivered, got_errors) == (want_delivered, want_errors)
    assert delivered == [0x1000, 0x1001, 0x1002]
    acks = [(frame[1][0], frame[2][0]) for frame in acks_sent]
    assert (1, 1) in acks                       # NAK: "send from 1 again"
    assert acks[-1] == (3, 0)                   # all three acknowledged
    assert all(frame == frame_bytes("link_ack", [frame[1][0], frame[2][0]])
               for frame in acks_sent)


def test_a_board_reset_while_its_neighbour_runs_does_not_block_the_link():
    """B is reset mid-stream (A is not): the link comes up again with B's sequence numbers
    from 0; A's words after the reset arrive in order (words B took but had not acknowledged are
    repeated to the new B, never skipped); B's words sent after its reset reach A in order."""
    pair = Pair(reset_b=True)
    rng = random.Random(40)
    forward = random_words(rng, 300, 0)
    backward = random_words(rng, 300, 1)
    got_b, got_a, log_a = [], [], []
    marks = {}

    async def check(ctx):
        await ctx.tick().until(pair.a.status.up)
        while len(got_b) < 100:
            await ctx.tick()
        marks["b_before"], marks["a_before"] = len(got_b), len(got_a)
        ctx.set(pair.b_reset, 1)
        await ctx.tick().repeat(5)
        ctx.set(pair.b_reset, 0)
        while got_b[-1] != forward[-1]:
            await ctx.tick().repeat(100)
        while not got_a or got_a[-1] != backward[-1]:
            await ctx.tick().repeat(100)
        marks["drops_a"] = ctx.get(pair.a.counters.link_drops)

    def paced(link, words):
        async def send(ctx):
            for item in words:
                ctx.set(link.tx_words.payload, item)
                ctx.set(link.tx_words.valid, 1)
                await ctx.tick().until(link.tx_words.ready)
                ctx.set(link.tx_words.valid, 0)
                await ctx.tick().repeat(40)
        return send

    run_pair(pair, (Line(delay=6), Line(delay=6)),
             [check, paced(pair.a, forward), paced(pair.b, backward)], 40000,
             background=[collect(pair.b, got_b, "sync"), collect(pair.a, got_a, "sync"),
                         watch_up(pair.a, log_a, "sync")])
    before, after = got_b[:marks["b_before"]], got_b[marks["b_before"]:]
    assert before == forward[:len(before)]
    start = forward.index(after[0])
    assert start <= len(before) and after == forward[start:]
    # B's words: in order, none twice; those B had taken but not sent before its reset are
    # lost with its state (the node's mailbox state is lost with it anyway).
    positions = [backward.index(word) for word in got_a]
    assert positions == sorted(set(positions)) and positions[-1] == len(backward) - 1
    assert marks["drops_a"] == 1


class _Chain3(Elaboratable):
    """Boards A - B - C: A has a downstream link, B an upstream and a downstream one, C an
    upstream one; each board's index is its upstream link's neighbour index + 1 (A: 0)."""

    def __init__(self):
        self.a_down = NeighbourLink(rx_domain="sync")
        self.b_up = NeighbourLink(rx_domain="sync")
        self.b_down = NeighbourLink(rx_domain="sync")
        self.c_up = NeighbourLink(rx_domain="sync")

    def elaborate(self, platform):
        m = Module()
        m.submodules += [self.a_down, self.b_up, self.b_down, self.c_up]
        b_index = self.b_up.status.neighbour_index + 1
        b_valid = self.b_up.status.neighbour_index_valid
        m.d.comb += [
            self.a_down.board_index.eq(0), self.a_down.board_index_valid.eq(1),
            self.b_up.board_index.eq(b_index), self.b_up.board_index_valid.eq(b_valid),
            self.b_down.board_index.eq(b_index), self.b_down.board_index_valid.eq(b_valid),
            self.c_up.board_index.eq(self.c_up.status.neighbour_index + 1),
            self.c_up.board_index_valid.eq(self.c_up.status.neighbour_index_valid),
        ]
        return m


def test_link_up_ripples_the_board_indices_down_a_chain_of_three():
    chain = _Chain3()
    seen = {}

    async def check(ctx):
        links = (chain.a_down, chain.b_up, chain.b_down, chain.c_up)
        await ctx.tick().until(chain.a_down.status.up & chain.b_down.status.up)
        for _ in range(50):         # C's index is valid once B's is and a ts carried it
            await ctx.tick().repeat(50)
            if all(ctx.get(link.status.neighbour_index_valid) for link in links):
                break
        await ctx.tick().repeat(300)
        seen.update({name: (ctx.get(link.status.neighbour_index),
                            ctx.get(link.status.neighbour_index_valid))
                     for name, link in zip(("a_down", "b_up", "b_down", "c_up"), links)})

    sim = Simulator(chain)
    sim.add_clock(1e-8)
    for tx, rx, seed in ((chain.a_down.tx, chain.b_up.rx, 1), (chain.b_up.tx, chain.a_down.rx, 2),
                         (chain.b_down.tx, chain.c_up.rx, 3), (chain.c_up.tx, chain.b_down.rx, 4)):
        sim.add_testbench(Line(delay=5, seed=seed).process(tx, rx, "sync", 2), background=True)
    sim.add_testbench(check)
    sim.run()
    # A's downstream neighbour is B (1); B hears A (0) upstream and C (2) downstream; C hears B.
    assert seen == {"a_down": (1, 1), "b_up": (0, 1), "b_down": (2, 1), "c_up": (1, 1)}
