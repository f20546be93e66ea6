"""Neighbour link: the mailbox words of one hop carried between two boards, full duplex.

One :class:`NeighbourLink` per neighbour (a board in the middle of the chain has two: upstream
and downstream). It carries what ``docs/chain.md`` ("The same mailbox between boards") puts on
the wire, and nothing else about the node changes: the sender's words ``(direction, slot,
word, data)`` in the order the MAC writes them, and the receiver's per-slot acknowledges
``(direction, slot)``. Both arrive at the other board exactly once, in order, bit-exact, or not
at all while the link is down (then the sender's window fills and its node stalls, as on a
full mailbox). The design is in ``docs/link.md``; in short:

- **PHY** (:class:`TransmitPHY`, :class:`ReceivePHY`): 8b/10b symbols
  (:mod:`linkdyn.gateware.line_code`), ``bits`` bits per clock (2 for DDR I/O at 50 MHz =
  100 Mbit/s), a forwarded clock, bit 0 = the bit sent first. The receiver finds the symbol
  boundary on the K28.5 comma and gives it up after a run of bad symbols. The board top adds
  the I/O buffers (``io.DDRBuffer``) and the receive clock domain; :class:`NeighbourLink`
  crosses from that domain to ``sync`` with an :class:`~amaranth.lib.fifo.AsyncFIFO`.
- **Frames** (:class:`LinkLayer`): a K start symbol, the payload bytes and a CRC-16/DNP
  (:data:`FRAME_CRC`, from :mod:`amaranth.lib.crc`) over the start symbol's byte and the
  payload padded to :data:`CRC_BYTES` bytes; a frame with a bad CRC or any code or disparity
  error is dropped. Kinds (:data:`FRAME_KINDS`): ``ts`` (training: the sender's board index,
  whether it hears the other side), ``word``, ``slot_ack`` (both sequenced), ``link_ack``
  (cumulative acknowledge of the sequenced frames, optionally a NAK); and the *burst* frame
  (:func:`burst_frame_bytes`, ``burst > 1``): up to ``burst`` words, each with its header and
  its own sequence number, under one start symbol, sequence byte and a CRC-16
  (:data:`BURST_CRC`), filled by the sender as the words come (cut-through), delivered after
  its CRC is checked.
- **Reliability**: go-back-N with 8-bit sequence numbers and a window of ``window`` frames; the
  receiver takes only the next sequence number, so it never delivers a frame twice or out of
  order; the sender repeats from the oldest unacknowledged frame on a NAK (a gap seen by the
  receiver), on a timeout without acknowledge progress, and at every link-up. Acknowledges
  are cumulative and coalesced while both directions are busy.
- **Link-up**: both sides send ``ts`` frames while idle; a side *hears* once it has received a
  good ``ts``; the link is *up* when it hears and the other side's last ``ts`` says it hears
  too. Link-down: no valid symbol for ``down_timeout`` cycles, or a ``ts`` from the other side
  saying it no longer hears. Sequence state survives a drop: the link resumes without a reset.
  A board reset while its neighbour runs is *fresh* until its first link-up; meanwhile both
  sides take the other's sequence numbers from the training frames, so the link recovers.
"""

from amaranth.hdl import Cat, Const, DomainRenamer, Module, Mux, Signal, Value
from amaranth.lib import data, stream, wiring
from amaranth.lib.crc import catalog
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.fifo import AsyncFIFO, SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .line_code import COMMA_PATTERNS, K28_5, Decoder8b10b, Encoder8b10b, control

__all__ = ["WordLayout", "SlotAckLayout", "CharLayout", "ReceivedCharLayout", "LinkStatus",
           "LinkCounters", "FRAME_KINDS", "FRAME_CRC", "CRC_BYTES", "IDLE", "frame_bytes",
           "BURST_START", "BURST_END", "MAX_BURST", "BURST_CRC", "burst_frame_bytes",
           "TransmitPHY", "ReceivePHY", "LinkLayer", "NeighbourLink"]

#: A mailbox word on the link: the tag and data the sender's node writes (``docs/chain.md``).
WordLayout = data.StructLayout({
    "direction": 1,     # 0 forward (proximal to distal), 1 backward
    "slot": 2,
    "word": 4,
    "data": 32,         # the node word, two's complement
})
#: A per-slot acknowledge on the link: the receiving node has read the slot.
SlotAckLayout = data.StructLayout({
    "direction": 1,
    "slot": 2,
})
#: A character before 8b/10b encoding.
CharLayout = data.StructLayout({"data": 8, "k": 1})
#: A character after decoding, with the decoder's error flags.
ReceivedCharLayout = data.StructLayout({
    "data": 8, "k": 1, "code_error": 1, "disparity_error": 1})

#: Link state for the host's registers.
LinkStatus = data.StructLayout({
    "aligned": 1,           # the receiver has symbol lock (comma found)
    "hears": 1,             # a good training frame came from the other side
    "up": 1,                # both sides hear each other: words flow
    "neighbour_index": 8,   # board index the other side sent in its last training frame
    "neighbour_index_valid": 1,
    "outstanding": 8,       # sequenced frames sent and not acknowledged (or not sent yet)
    "rx_sequence": 8,       # next sequence number the receiver takes
})
#: Event counters (wrap around at 2**32).
LinkCounters = data.StructLayout({
    "frames_sent": 32,      # words and slot acks sent, repeats included (per word in a burst)
    "frames_received": 32,  # words and slot acks delivered (each once)
    "crc_errors": 32,       # frames dropped: bad CRC, code or disparity error, cut short
    "retransmissions": 32,  # words and slot acks sent again
    "link_drops": 32,       # up -> down transitions
})

#: Frame kinds: start symbol (a K character) and payload length in bytes (before the CRC).
FRAME_KINDS = {
    "ts": (control(28, 1), 3),          # board index, flags (below), sender's oldest unacked
    "word": (control(27, 7), 6),        # header, sequence, data (4 bytes, LSB first)
    "slot_ack": (control(29, 7), 2),    # header, sequence
    "link_ack": (control(30, 7), 2),    # next sequence expected, flags (bit 0 NAK)
}
#: Idle fill and comma (precedes every training frame; ignored between frames).
IDLE = K28_5
#: Start and end symbols of a *burst* frame (``LinkLayer(burst > 1)``): up to ``burst``
#: sequenced words, each with its header, under one start symbol, sequence number and CRC
#: (:func:`burst_frame_bytes`).
BURST_START = control(23, 7)
BURST_END = control(28, 0)
#: Most words a burst frame may carry.
MAX_BURST = 16
#: CRC of the burst frames: CRC-16/KERMIT (polynomial 0x1021, reflected). CRC-16/DNP's
#: distance drops to 2 beyond about 20 bytes (a short period); 0x1021 = (x + 1) p(x) keeps
#: distance 4 (every error of up to 3 bits, every odd number of bit errors) over the longest
#: burst frame (checked in the tests).
BURST_CRC = catalog.CRC16_KERMIT
#: CRC of every frame: CRC-16/DNP (polynomial 0x3D65, reflected, xor-out 0xFFFF), minimum
#: Hamming distance 6 over the 72 bits of the longest frame's CRC word (checked in the tests).
FRAME_CRC = catalog.CRC16_DNP
#: Bytes under the CRC: the start symbol's byte and the payload, zero-padded to this length.
CRC_BYTES = 7

_TS_INDEX_VALID = 1 << 0     # the board index is known
_TS_HEARS = 1 << 1           # the sender receives good training frames
_TS_FRESH = 1 << 2           # the sender has not been up since its reset
_NAK = 1 << 0
#: Idle K28.5 characters between two training frames while the link is up and idle (a word
#: offered while a training frame is on the line waits up to its 7 characters: rarer training
#: frames, less jitter; the link-down detection does not depend on them, see docs/link.md).
_IDLE_PER_TS = 63


def _header(direction, slot, word):
    return (word & 15) | (slot & 3) << 4 | (direction & 1) << 6


def frame_bytes(kind, payload):
    """Return a frame as characters, the Python reference of :class:`LinkLayer`'s framing.

    Parameters
    ----------
    kind : str
        A key of :data:`FRAME_KINDS`.
    payload : sequence of int
        The payload bytes (as many as the kind has).

    Returns
    -------
    list of (int, bool)
        ``(byte, k)`` per character: the start symbol, the payload, the CRC (LSB first).

    Raises
    ------
    ValueError
        If the kind is unknown or the payload has the wrong length or a non-byte.
    """
    if kind not in FRAME_KINDS:
        raise ValueError(f"Frame kind must be one of {', '.join(FRAME_KINDS)}, not {kind!r}")
    start, length = FRAME_KINDS[kind]
    payload = list(payload)
    if len(payload) != length or not all(isinstance(b, int) and 0 <= b <= 255 for b in payload):
        raise ValueError(f"A {kind} frame has {length} payload bytes 0 .. 255, not {payload!r}")
    crc = _crc16_dnp([start, *payload] + [0] * (CRC_BYTES - 1 - length))
    return [(start, True)] + [(b, False) for b in payload] + [(crc & 255, False),
                                                              (crc >> 8, False)]


def burst_frame_bytes(sequence, words):
    """Return a burst frame as characters, the Python reference of :class:`LinkLayer`'s burst
    framing.

    A burst frame carries ``len(words)`` sequenced words: word j has sequence number
    ``sequence + j``. Layout: :data:`BURST_START` (K), the sequence number, per word its
    header (word, slot, direction as in a ``word`` frame) and 4 data bytes (LSB first),
    :data:`BURST_END` (K), the CRC (:data:`BURST_CRC`, LSB first) over the start symbol's
    byte, the sequence number and the words' bytes (no padding): ``5 + 5 k`` characters for k
    words.

    Parameters
    ----------
    sequence : int
        Byte 0 .. 255.
    words : sequence of (int, int)
        1 .. :data:`MAX_BURST` pairs ``(header, data)``: a header byte 0 .. 127 and a word
        0 .. 2**32 - 1.

    Returns
    -------
    list of (int, bool)
        ``(byte, k)`` per character.

    Raises
    ------
    ValueError
        If a byte or word is out of range, or there are no or too many words.
    """
    words = list(words)
    if not isinstance(sequence, int) or not 0 <= sequence <= 255:
        raise ValueError(f"Sequence number must be a byte, not {sequence!r}")
    if not 1 <= len(words) <= MAX_BURST or not all(
            isinstance(h, int) and 0 <= h < 128 and isinstance(w, int) and 0 <= w < 1 << 32
            for h, w in words):
        raise ValueError(f"A burst frame carries 1 .. {MAX_BURST} (header 0 .. 127, word "
                         f"0 .. 2**32 - 1) pairs, not {words!r}")
    body = [sequence] + [b for h, w in words for b in [h] + list(w.to_bytes(4, "little"))]
    crc = _crc16_kermit([BURST_START] + body)
    return ([(BURST_START, True)] + [(b, False) for b in body]
            + [(BURST_END, True), (crc & 255, False), (crc >> 8, False)])


def _crc16_kermit(message):
    """CRC-16/KERMIT, bit by bit (reflected: polynomial 0x1021 reversed is 0x8408)."""
    crc = 0
    for byte in message:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x8408 if crc & 1 else 0)
    return crc


def _crc16_dnp(message):
    """CRC-16/DNP, bit by bit (reflected: polynomial 0x3D65 reversed is 0xA6BC)."""
    crc = 0
    for byte in message:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0xA6BC if crc & 1 else 0)
    return crc ^ 0xFFFF


def _check_int(name, value, low, high):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be {low} .. {high}, not {value!r}")


def _check_bits(bits):
    if not isinstance(bits, int) or isinstance(bits, bool):
        raise TypeError(f"Bits per cycle must be an integer, not {bits!r}")
    if bits not in (1, 2, 5, 10):
        raise ValueError(f"Bits per cycle must divide a 10-bit symbol (1, 2, 5 or 10), "
                         f"not {bits!r}")


class TransmitPHY(wiring.Component):
    """8b/10b encoder and serializer: one character every ``10 // bits`` cycles.

    Parameters
    ----------
    bits : int
        Bits per clock cycle on ``tx`` (1, 2, 5 or 10; 2 for a DDR output).

    Members
    -------
    chars : In(stream.Signature(CharLayout))
        Characters to send; one is taken every ``10 // bits`` cycles. Without a valid
        character the PHY sends :data:`IDLE` (K28.5).
    tx : Out(bits)
        The line, registered; ``tx[0]`` is the earlier bit (the DDR output's first half).

    Raises
    ------
    TypeError, ValueError
        If ``bits`` is not 1, 2, 5 or 10.
    """

    def __init__(self, bits=2):
        _check_bits(bits)
        self._bits = bits
        super().__init__({"chars": In(stream.Signature(CharLayout)), "tx": Out(bits)})

    def elaborate(self, platform):
        m = Module()
        period = 10 // self._bits
        m.submodules.encoder = encoder = Encoder8b10b()
        phase = Signal(range(period))
        shift = Signal(10)
        last = phase == period - 1
        m.d.sync += phase.eq(Mux(last, 0, phase + 1))
        m.d.comb += [
            self.chars.ready.eq(last),
            encoder.en.eq(last),
            encoder.data.eq(Mux(self.chars.valid, self.chars.payload.data, IDLE)),
            encoder.k.eq(Mux(self.chars.valid, self.chars.payload.k, 1)),
        ]
        # The encoder's symbol is registered in the last phase; it goes out from phase 0.
        with m.If(phase == 0):
            m.d.sync += [self.tx.eq(encoder.symbol[:self._bits]),
                         shift.eq(encoder.symbol >> self._bits)]
        with m.Else():
            m.d.sync += [self.tx.eq(shift[:self._bits]), shift.eq(shift >> self._bits)]
        return m


class ReceivePHY(wiring.Component):
    """Symbol aligner and 8b/10b decoder: ``bits`` bits per cycle in, characters out.

    The aligner looks for a comma (:data:`~linkdyn.gateware.line_code.COMMA_PATTERNS`) at
    every bit position; the first one found fixes the symbol boundary (*aligned*). While
    aligned, every bad symbol (code or disparity error) adds 4 to an error score, every good one
    takes 1 off; a score of 16 gives up the alignment and the search starts again (a false
    lock, e.g. on a comma made by bit errors, is left within a few symbols; at a bit-error rate
    of 1e-4 the score stays near 0).

    Parameters
    ----------
    bits : int
        Bits per clock cycle on ``rx`` (1, 2, 5 or 10).

    Members
    -------
    rx : In(bits)
        The line, already in this component's clock domain (the forwarded receive clock);
        ``rx[0]`` is the earlier bit.
    chars : Out(stream.Signature(ReceivedCharLayout))
        Decoded characters with their error flags, one every ``10 // bits`` cycles while
        aligned; ``valid`` is a one-cycle pulse (``ready`` is not waited for: the reader must
        keep up, an :class:`~amaranth.lib.fifo.AsyncFIFO` into a faster clock does).
    aligned : Out(1)

    Raises
    ------
    TypeError, ValueError
        If ``bits`` is not 1, 2, 5 or 10.
    """

    def __init__(self, bits=2):
        _check_bits(bits)
        self._bits = bits
        super().__init__({"rx": In(bits), "chars": Out(stream.Signature(ReceivedCharLayout)),
                          "aligned": Out(1)})

    def elaborate(self, platform):
        m = Module()
        bits = self._bits
        period = 10 // bits
        m.submodules.decoder = decoder = Decoder8b10b()
        # history[9 : 9 + bits] are the newest bits; window o is history[o : o + 10].
        history = Signal(9 + bits)
        m.d.sync += history.eq(Cat(history[bits:], self.rx))
        windows = [history[o:o + 10] for o in range(bits)]
        commas = Signal(bits)
        m.d.comb += commas.eq(Cat(*[(w[:7] == COMMA_PATTERNS[0]) | (w[:7] == COMMA_PATTERNS[1])
                                    for w in windows]))

        offset = Signal(range(bits))
        phase = Signal(range(period))
        score = Signal(range(32))
        symbol = Signal(10)
        m.d.comb += symbol.eq(Cat(*windows).word_select(offset, 10))

        # Symbol complete at phase 0 (the cycle its last bit is in the history).
        m.d.sync += phase.eq(Mux(phase == period - 1, 0, phase + 1))
        found = _first_one(m, commas)
        with m.If(~self.aligned):
            with m.If(commas.any()):
                # The comma's symbol is complete now: decode it, the next one in a period.
                m.d.sync += [offset.eq(found), self.aligned.eq(1), score.eq(0),
                             phase.eq(1 % period)]
                m.d.comb += [decoder.en.eq(1),
                             decoder.symbol.eq(Cat(*windows).word_select(found, 10))]
        with m.Else():
            m.d.comb += [decoder.en.eq(phase == 0), decoder.symbol.eq(symbol)]

        bad = decoder.code_error | decoder.disparity_error
        with m.If(decoder.valid & self.aligned):
            with m.If(bad):
                with m.If(score >= 12):
                    m.d.sync += self.aligned.eq(0)
                m.d.sync += score.eq(Mux(score >= 12, 0, score + 4))
            with m.Elif(score != 0):
                m.d.sync += score.eq(score - 1)
        m.d.comb += [
            self.chars.valid.eq(decoder.valid),
            self.chars.payload.data.eq(decoder.data),
            self.chars.payload.k.eq(decoder.k),
            self.chars.payload.code_error.eq(decoder.code_error),
            self.chars.payload.disparity_error.eq(decoder.disparity_error),
        ]
        return m


def _first_one(m, value):
    """Index of the lowest set bit of ``value`` (0 if none)."""
    index = Signal(range(max(2, len(value))))
    for i in reversed(range(len(value))):
        with m.If(value[i]):
            m.d.comb += index.eq(i)
    return index


def _link_members():
    return {
        "tx_words": In(stream.Signature(WordLayout)),
        "tx_slot_acks": In(stream.Signature(SlotAckLayout)),
        "rx_words": Out(stream.Signature(WordLayout)),
        "rx_slot_acks": Out(stream.Signature(SlotAckLayout)),
        "board_index": In(8),
        "board_index_valid": In(1),
        "status": Out(LinkStatus),
        "counters": Out(LinkCounters),
    }


class LinkLayer(wiring.Component):
    """Framing, go-back-N retransmission and link training, on characters.

    Parameters
    ----------
    window : int
        Sequenced frames the sender keeps for repetition (a power of 2, 2 .. 64): the most it
        sends ahead of the acknowledges. It needs ``window * frame time >= round trip`` for
        full rate (a word frame is 9 characters).
    ack_timeout : int
        Cycles without acknowledge progress, while frames are outstanding, after which the
        sender repeats from the oldest (> the round trip: two line delays, a word and a
        link_ack frame).
    down_timeout : int
        Cycles without a valid character after which the link is down.
    burst : int
        Most words the sender puts in one frame, 1 .. :data:`MAX_BURST`. 1: every word in its
        own ``word`` frame (9 characters). More: words go in *burst* frames
        (:func:`burst_frame_bytes`, 5 + 5 k characters for k words) that the sender fills as
        the words come (cut-through): it starts a frame with the oldest unsent word and
        appends the next word of the window if it is there when the previous one's last byte
        goes out and the frame has room; every word keeps its own sequence number, so
        go-back-N and the exactly-once rule work per word. The receiver takes burst frames of
        up to :data:`MAX_BURST` words whatever its own ``burst``, so each direction of a link
        may use its own.

    Members
    -------
    tx_words : In(stream.Signature(WordLayout))
        Words to send (the sender node's mailbox writes); taken while the window has room.
    tx_slot_acks : In(stream.Signature(SlotAckLayout))
        Per-slot acknowledges to send (the receiving node read the slot); they go in the same
        sequence as the words, before a word offered in the same cycle.
    rx_words : Out(stream.Signature(WordLayout))
        Words received, each exactly once, in the sender's order; ``valid`` held until
        ``ready`` (a word arriving while one is still held is dropped and repeated later).
    rx_slot_acks : Out(stream.Signature(SlotAckLayout))
        Slot acknowledges received, likewise.
    board_index, board_index_valid : In(8), In(1)
        This board's index, sent in the training frames (the base board knows it is 0; another
        board takes its upstream neighbour's ``neighbour_index + 1`` once that link is up).
    status : Out(LinkStatus)
    counters : Out(LinkCounters)
    tx_chars : Out(stream.Signature(CharLayout))
        Characters to the :class:`TransmitPHY`; always valid.
    rx_chars : In(stream.Signature(ReceivedCharLayout))
        Characters from the :class:`ReceivePHY` (through the clock-domain crossing).
    rx_aligned : In(1)
        The receive PHY's ``aligned`` (for ``status``).

    Raises
    ------
    TypeError, ValueError
        If a parameter is not an integer in its range.
    """

    def __init__(self, *, window=16, ack_timeout=1024, down_timeout=256, burst=1):
        _check_int("Window", window, 2, 64)
        _check_int("Burst", burst, 1, MAX_BURST)
        if burst > window:
            raise ValueError(f"Burst must be at most the window ({window}), not {burst!r}")
        if window & (window - 1):
            raise ValueError(f"Window must be a power of 2, not {window!r}")
        _check_int("Acknowledge timeout", ack_timeout, 16, 1 << 20)
        _check_int("Down timeout", down_timeout, 16, 1 << 20)
        self._window = window
        self._ack_timeout = ack_timeout
        self._down_timeout = down_timeout
        self._burst = burst
        super().__init__({
            **_link_members(),
            "tx_chars": Out(stream.Signature(CharLayout)),
            "rx_chars": In(stream.Signature(ReceivedCharLayout)),
            "rx_aligned": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        window = self._window
        kinds = {name: start for name, (start, _) in FRAME_KINDS.items()}
        lengths = {name: length for name, (_, length) in FRAME_KINDS.items()}
        status, counters = self.status, self.counters

        # ---- Shared state: training -------------------------------------------------------
        hears = Signal()
        neighbour_hears = Signal()
        up = Signal()
        silence = Signal(range(self._down_timeout + 1))
        m.d.comb += [
            up.eq(hears & neighbour_hears),
            status.up.eq(up),
            status.hears.eq(hears),
            status.aligned.eq(self.rx_aligned),
        ]
        # Until its first link-up after a reset a side is "fresh": both sides then take the
        # other's oldest unacknowledged sequence number as the next one they expect, so a board
        # reset while its neighbour was not (sequence numbers from 0 against the neighbour's)
        # does not block the link. Without a reset nothing is taken: no word is lost or
        # repeated across a cut.
        fresh = Signal(init=1)
        up_before = Signal()
        m.d.sync += up_before.eq(up)
        with m.If(up_before & ~up):
            m.d.sync += counters.link_drops.eq(counters.link_drops + 1)
        link_came_up = ~up_before & up

        # ---- Sender: window buffer ----------------------------------------------------------
        # Entry: kind (0 word, 1 slot_ack), direction, slot, word, data.
        entry_layout = data.StructLayout({"slot_ack": 1, "direction": 1, "slot": 2, "word": 4,
                                          "data": 32})
        m.submodules.buffer = buffer = Memory(shape=entry_layout, depth=window, init=[])
        buffer_write = buffer.write_port()
        buffer_read = buffer.read_port(domain="comb")
        base = Signal(8)        # oldest unacknowledged sequence number
        next_new = Signal(8)    # sequence number of the next frame taken in
        send_ptr = Signal(8)    # next sequence number to send
        high = Signal(8)        # one past the highest sequence number ever sent
        outstanding = Signal(8)
        m.d.comb += [outstanding.eq(next_new - base), status.outstanding.eq(outstanding)]
        room = outstanding < window
        m.d.comb += [
            self.tx_slot_acks.ready.eq(room),
            self.tx_words.ready.eq(room & ~self.tx_slot_acks.valid),
            buffer_write.addr.eq(next_new),
            buffer_read.addr.eq(send_ptr),
        ]
        with m.If(self.tx_slot_acks.valid & room):
            m.d.comb += [
                buffer_write.en.eq(1),
                buffer_write.data.slot_ack.eq(1),
                buffer_write.data.direction.eq(self.tx_slot_acks.payload.direction),
                buffer_write.data.slot.eq(self.tx_slot_acks.payload.slot),
            ]
        with m.Elif(self.tx_words.valid & room):
            m.d.comb += [
                buffer_write.en.eq(1),
                buffer_write.data.direction.eq(self.tx_words.payload.direction),
                buffer_write.data.slot.eq(self.tx_words.payload.slot),
                buffer_write.data.word.eq(self.tx_words.payload.word),
                buffer_write.data.data.eq(self.tx_words.payload.data),
            ]
        with m.If(buffer_write.en):
            m.d.sync += next_new.eq(next_new + 1)

        # ---- Receiver -> sender: acknowledges to apply and to send --------------------------
        lack_valid = Signal()       # a good link_ack arrived (one-cycle pulse)
        lack_seq = Signal(8)
        lack_nak = Signal()
        ack_pending = Signal()      # the receiver wants a link_ack sent
        nak_pending = Signal()
        nak_sent = Signal()         # a NAK for the current rx_sequence went out
        rx_sequence = Signal(8)
        rx_unacknowledged = Signal(range(window + 1))    # frames taken since the last link_ack
        link_ack_sent = Signal()
        with m.If(link_ack_sent):
            m.d.sync += rx_unacknowledged.eq(0)
        m.d.comb += status.rx_sequence.eq(rx_sequence)

        # ---- Sender: frame builder ----------------------------------------------------------
        m.submodules.tx_crc = tx_crc = FRAME_CRC(data_width=8 * CRC_BYTES).create()
        frame_kind = Signal(8)
        frame_payload = Signal(8 * (CRC_BYTES - 1))
        frame_length = Signal(range(CRC_BYTES))
        index = Signal(range(CRC_BYTES + 2))
        since_ts = Signal(range(64))
        idle_chars = Signal(range(_IDLE_PER_TS + 1))
        timer = Signal(range(self._ack_timeout + 1))
        m.d.comb += [tx_crc.data.eq(Cat(frame_kind, frame_payload)), self.tx_chars.valid.eq(1)]
        entry = buffer_read.data
        burst = self._burst
        # Burst frames: a byte-serial CRC fed as the characters go out; the word on the line
        # is latched (its window entry may be repeated from elsewhere after a go-back).
        burst_frame = Signal()              # the frame on the line is a burst frame
        pointer_moved = Signal()            # the acknowledge logic moves send_ptr this cycle
        if burst > 1:
            m.submodules.burst_tx_crc = burst_tx_crc = BURST_CRC(data_width=8).create()
            burst_sequence = Signal(8)
            burst_header = Signal(data.StructLayout({"word": 4, "slot": 2, "direction": 1}))
            burst_data = Signal(32)
            burst_count = Signal(range(burst + 1))
            burst_moved = Signal()          # send_ptr was moved since the frame started
            frame_crc = Mux(burst_frame, burst_tx_crc.crc, tx_crc.crc)
        else:
            frame_crc = tx_crc.crc

        def feed_burst_crc(byte, first=False):
            m.d.comb += [burst_tx_crc.data.eq(byte), burst_tx_crc.valid.eq(1)]
            if first:
                m.d.comb += burst_tx_crc.start.eq(1)

        def send_single():
            start("word", [
                Cat(entry.word, entry.slot, entry.direction, Const(0, 1)), send_ptr,
                entry.data[0:8], entry.data[8:16], entry.data[16:24], entry.data[24:32]])
            with m.If(entry.slot_ack):
                # Same header and sequence bytes; its word and data are 0 in the
                # buffer, so the CRC's zero padding holds.
                m.d.sync += [frame_kind.eq(kinds["slot_ack"]),
                             frame_length.eq(lengths["slot_ack"])]
            m.d.sync += [send_ptr.eq(send_ptr + 1), since_ts.eq(since_ts + 1),
                         counters.frames_sent.eq(counters.frames_sent + 1), burst_frame.eq(0)]
            with m.If(send_ptr == high):
                m.d.sync += high.eq(high + 1)
            with m.Else():
                m.d.sync += counters.retransmissions.eq(counters.retransmissions + 1)
            m.next = "CRC"

        def start(kind, payload):
            # One byte per payload item, zero-extended.
            payload = [Value.cast(item) for item in payload]
            assert len(payload) == lengths[kind] and all(len(item) <= 8 for item in payload)
            m.d.sync += [
                frame_kind.eq(kinds[kind]),
                frame_payload.eq(Cat(*[item if len(item) == 8
                                       else Cat(item, Const(0, 8 - len(item)))
                                       for item in payload])),
                frame_length.eq(lengths[kind]),
                index.eq(0),
                burst_frame.eq(0),
            ]

        with m.FSM(name="tx"):
            with m.State("DECIDE"):
                m.d.comb += self.tx_chars.valid.eq(0)
                # A link_ack goes out at once when there is nothing else to send, for a NAK,
                # or once half a window of frames is unacknowledged; under traffic both ways
                # it waits, so that one acknowledges several frames.
                with m.If(ack_pending & hears & (
                        nak_pending | ~(up & (send_ptr != next_new) & (since_ts != 63))
                        | (rx_unacknowledged >= window // 2))):
                    start("link_ack", [rx_sequence, Mux(nak_pending, _NAK, 0)])
                    m.d.comb += link_ack_sent.eq(1)
                    m.d.sync += [ack_pending.eq(0), nak_pending.eq(0)]
                    with m.If(nak_pending):
                        m.d.sync += nak_sent.eq(1)
                    m.next = "CRC"
                with m.Elif(up & (send_ptr != next_new) & (since_ts != 63)):
                    if burst > 1:
                        with m.If(entry.slot_ack):
                            send_single()
                        with m.Else():
                            # A burst frame with this word first; send_ptr moves on as each
                            # word's last byte goes out.
                            m.d.sync += [
                                burst_frame.eq(1), burst_sequence.eq(send_ptr),
                                burst_header.word.eq(entry.word),
                                burst_header.slot.eq(entry.slot),
                                burst_header.direction.eq(entry.direction),
                                burst_data.eq(entry.data), burst_count.eq(1),
                                burst_moved.eq(0), since_ts.eq(since_ts + 1), index.eq(0),
                            ]
                            m.next = "BURST_SOF"
                    else:
                        send_single()
                with m.Elif(up & (idle_chars != _IDLE_PER_TS)):
                    # Up and nothing to send: single K28.5s (a word waits at most one symbol),
                    # a training frame every few of them.
                    m.d.sync += idle_chars.eq(idle_chars + 1)
                    m.next = "IDLE"
                with m.Else():
                    start("ts", [self.board_index,
                                 Mux(self.board_index_valid, _TS_INDEX_VALID, 0)
                                 | Mux(hears, _TS_HEARS, 0) | Mux(fresh, _TS_FRESH, 0), base])
                    m.d.sync += [since_ts.eq(0), idle_chars.eq(0)]
                    m.next = "COMMA"
            with m.State("IDLE"):
                m.d.comb += [self.tx_chars.payload.data.eq(IDLE), self.tx_chars.payload.k.eq(1)]
                with m.If(self.tx_chars.ready):
                    m.next = "DECIDE"
            with m.State("COMMA"):
                m.d.comb += [self.tx_chars.payload.data.eq(IDLE), self.tx_chars.payload.k.eq(1)]
                with m.If(self.tx_chars.ready):
                    m.next = "CRC"
            with m.State("CRC"):
                # The frame registers hold the frame now; its CRC is ready in the next cycle.
                m.d.comb += [tx_crc.start.eq(1), tx_crc.valid.eq(1), self.tx_chars.valid.eq(0)]
                m.next = "SOF"
            with m.State("SOF"):
                m.d.comb += [self.tx_chars.payload.data.eq(frame_kind),
                             self.tx_chars.payload.k.eq(1)]
                with m.If(self.tx_chars.ready):
                    m.next = "PAYLOAD"
            with m.State("PAYLOAD"):
                m.d.comb += self.tx_chars.payload.data.eq(frame_payload.word_select(index, 8))
                with m.If(self.tx_chars.ready):
                    m.d.sync += index.eq(index + 1)
                    with m.If(index == frame_length - 1):
                        m.next = "CHECK_LOW"
            with m.State("CHECK_LOW"):
                m.d.comb += self.tx_chars.payload.data.eq(frame_crc[:8])
                with m.If(self.tx_chars.ready):
                    m.next = "CHECK_HIGH"
            with m.State("CHECK_HIGH"):
                m.d.comb += self.tx_chars.payload.data.eq(frame_crc[8:])
                with m.If(self.tx_chars.ready):
                    m.next = "DECIDE"
            if burst > 1:
                with m.State("BURST_SOF"):
                    m.d.comb += [self.tx_chars.payload.data.eq(BURST_START),
                                 self.tx_chars.payload.k.eq(1)]
                    with m.If(self.tx_chars.ready):
                        feed_burst_crc(BURST_START, first=True)
                        m.next = "BURST_SEQUENCE"
                with m.State("BURST_SEQUENCE"):
                    m.d.comb += self.tx_chars.payload.data.eq(burst_sequence)
                    with m.If(self.tx_chars.ready):
                        feed_burst_crc(burst_sequence)
                        m.next = "BURST_HEADER"
                with m.State("BURST_HEADER"):
                    header_byte = Cat(burst_header.as_value(), Const(0, 1))
                    m.d.comb += self.tx_chars.payload.data.eq(header_byte)
                    with m.If(self.tx_chars.ready):
                        feed_burst_crc(header_byte)
                        m.d.sync += index.eq(0)
                        m.next = "BURST_DATA"
                with m.State("BURST_DATA"):
                    byte = burst_data.word_select(index[:2], 8)
                    m.d.comb += self.tx_chars.payload.data.eq(byte)
                    with m.If(self.tx_chars.ready):
                        feed_burst_crc(byte)
                        m.d.sync += index.eq(index + 1)
                        with m.If(index[:2] == 3):
                            # The word is on the line: count it and move on.
                            moved = burst_moved | pointer_moved
                            m.d.sync += counters.frames_sent.eq(counters.frames_sent + 1)
                            with m.If(send_ptr == high):
                                m.d.sync += high.eq(high + 1)
                            with m.Else():
                                m.d.sync += counters.retransmissions.eq(
                                    counters.retransmissions + 1)
                            with m.If(~moved):
                                m.d.sync += send_ptr.eq(send_ptr + 1)
                            m.next = "BURST_NEXT"
                with m.State("BURST_NEXT"):
                    # The next word's header if the word is in the window now, the frame has
                    # room and nothing moved the send pointer; else the end of the frame.
                    more = (~burst_moved & ~pointer_moved & up & (send_ptr != next_new)
                            & ~entry.slot_ack & (burst_count != burst))
                    header_byte = Cat(entry.word, entry.slot, entry.direction, Const(0, 1))
                    with m.If(more):
                        m.d.comb += self.tx_chars.payload.data.eq(header_byte)
                        with m.If(self.tx_chars.ready):
                            feed_burst_crc(header_byte)
                            m.d.sync += [burst_data.eq(entry.data),
                                         burst_count.eq(burst_count + 1), index.eq(0)]
                            m.next = "BURST_DATA"
                    with m.Else():
                        m.d.comb += [self.tx_chars.payload.data.eq(BURST_END),
                                     self.tx_chars.payload.k.eq(1)]
                        with m.If(self.tx_chars.ready):
                            m.next = "CHECK_LOW"

        # ---- Sender: acknowledges, timeout, go-back -----------------------------------------
        lack_distance = Signal(8)
        send_distance = Signal(8)
        m.d.comb += [lack_distance.eq(lack_seq - base), send_distance.eq(send_ptr - base)]
        with m.If((outstanding != 0) & up):
            m.d.sync += timer.eq(timer + 1)
        with m.If(lack_valid & (lack_distance <= outstanding)):
            m.d.sync += base.eq(lack_seq)
            with m.If(lack_distance != 0):
                m.d.sync += timer.eq(0)
            with m.If(lack_nak | (send_distance < lack_distance)):
                m.d.sync += send_ptr.eq(lack_seq)
                m.d.comb += pointer_moved.eq(1)
        with m.Elif((timer == self._ack_timeout) | link_came_up):
            m.d.sync += [send_ptr.eq(base), timer.eq(0)]
            m.d.comb += pointer_moved.eq(1)
        if burst > 1:
            with m.If(pointer_moved):
                m.d.sync += burst_moved.eq(1)
        with m.If(~up):
            m.d.sync += timer.eq(0)
        # The first frame after link-up is a training frame: the other side may still wait
        # for our "hears" to come up itself.
        with m.If(link_came_up):
            m.d.sync += [since_ts.eq(63), fresh.eq(0)]

        # ---- Receiver: frame parser ---------------------------------------------------------
        m.submodules.rx_crc = rx_crc = FRAME_CRC(data_width=8 * CRC_BYTES).create()
        rx_kind = Signal(8)
        rx_bytes = Signal(8 * (CRC_BYTES + 1))      # payload, then the CRC (low, high)
        rx_count = Signal(range(CRC_BYTES + 2))
        rx_length = Signal(range(CRC_BYTES + 2))    # payload + 2
        char = self.rx_chars.payload
        char_bad = char.code_error | char.disparity_error
        take = self.rx_chars.valid & self.rx_chars.ready
        with m.If(take & ~char_bad):
            m.d.sync += silence.eq(0)
        with m.Elif(silence != self._down_timeout):
            m.d.sync += silence.eq(silence + 1)

        rx_payload_length = Signal(range(CRC_BYTES))
        m.d.comb += rx_payload_length.eq(rx_length - 2)
        padded = Signal(8 * (CRC_BYTES - 1))
        for i in range(CRC_BYTES - 1):
            m.d.comb += padded.word_select(i, 8).eq(
                Mux(i < rx_payload_length, rx_bytes.word_select(i, 8), 0))
        received_crc = Signal(16)
        m.d.comb += received_crc.eq(rx_bytes.bit_select(rx_payload_length * 8, 16))
        m.d.comb += rx_crc.data.eq(Cat(rx_kind, padded))

        frame_error = Signal()
        m.d.comb += self.rx_chars.ready.eq(1)
        is_start = Signal()
        burst_start = char.data == BURST_START
        m.d.comb += is_start.eq(char.k & ~char_bad & (
            (char.data == kinds["ts"]) | (char.data == kinds["word"])
            | (char.data == kinds["slot_ack"]) | (char.data == kinds["link_ack"])
            | burst_start))

        # Burst frames: the words collected into one half of a small RAM while the other half
        # is delivered; a byte-serial CRC fed as the characters come.
        burst_good = Signal()           # a good burst frame ended (one-cycle pulse)
        m.submodules.burst_rx_crc = burst_rx_crc = BURST_CRC(data_width=8).create()
        # Entry: the word's header (low byte) and data.
        m.submodules.burst_words = burst_words = Memory(shape=40, depth=2 * MAX_BURST, init=[])
        collect_port = burst_words.write_port()
        deliver_port = burst_words.read_port(domain="comb")
        collect_bank = Signal()
        rx_burst_sequence = Signal(8)
        rx_burst_count = Signal(range(MAX_BURST + 1))
        rx_burst_byte = Signal(range(5))   # 0: the word's header, 1 .. 4: its data bytes
        rx_burst_bytes = Signal(32)        # the word's header and first three data bytes
        rx_burst_crc_low = Signal(8)
        m.d.comb += [collect_port.addr.eq(Cat(rx_burst_count[:4], collect_bank)),
                     collect_port.data.eq(Cat(rx_burst_bytes, char.data))]

        def start_frame():
            m.d.sync += [rx_kind.eq(char.data), rx_count.eq(0)]
            for name in kinds:
                with m.If(char.data == kinds[name]):
                    m.d.sync += rx_length.eq(lengths[name] + 2)
            with m.If(burst_start):
                m.d.comb += [burst_rx_crc.start.eq(1), burst_rx_crc.valid.eq(1),
                             burst_rx_crc.data.eq(char.data)]
                m.d.sync += [rx_burst_count.eq(0), rx_burst_byte.eq(0)]
                m.next = "BURST"
            with m.Else():
                m.next = "COLLECT"

        def burst_char_error():
            # Another frame's start cuts it short; any other K or bad character ends it.
            m.d.comb += frame_error.eq(1)
            with m.If(is_start):
                start_frame()
            with m.Else():
                m.next = "HUNT"

        with m.FSM(name="rx"):
            with m.State("HUNT"):
                with m.If(take & is_start):
                    start_frame()
            with m.State("COLLECT"):
                with m.If(take):
                    with m.If(is_start):
                        m.d.comb += frame_error.eq(1)        # cut short by the next frame
                        start_frame()
                    with m.Elif(char.k | char_bad):
                        m.d.comb += frame_error.eq(1)
                        m.next = "HUNT"
                    with m.Else():
                        m.d.sync += [rx_bytes.word_select(rx_count, 8).eq(char.data),
                                     rx_count.eq(rx_count + 1)]
                        with m.If(rx_count == rx_length - 1):
                            m.next = "CHECK"
            with m.State("CHECK"):
                m.d.comb += [rx_crc.start.eq(1), rx_crc.valid.eq(1), self.rx_chars.ready.eq(0)]
                m.next = "DISPATCH"
            with m.State("DISPATCH"):
                m.d.comb += self.rx_chars.ready.eq(0)
                with m.If(rx_crc.crc != received_crc):
                    m.d.comb += frame_error.eq(1)
                m.next = "HUNT"
            with m.State("BURST"):
                # Sequence number, then per word its header and 4 data bytes, up to the end
                # symbol.
                at_boundary = (rx_count == 1) & (rx_burst_byte == 0)
                with m.If(take):
                    with m.If(char.k & ~char_bad & (char.data == BURST_END) & at_boundary
                              & (rx_burst_count != 0)):
                        m.next = "BURST_CHECK_LOW"
                    with m.Elif(char.k | char_bad
                                | (at_boundary & (rx_burst_count == MAX_BURST))):
                        burst_char_error()
                    with m.Else():
                        m.d.comb += [burst_rx_crc.valid.eq(1), burst_rx_crc.data.eq(char.data)]
                        with m.If(rx_count == 0):
                            m.d.sync += [rx_burst_sequence.eq(char.data), rx_count.eq(1)]
                        with m.Else():
                            m.d.sync += [rx_burst_byte.eq(Mux(rx_burst_byte == 4, 0,
                                                              rx_burst_byte + 1)),
                                         rx_burst_bytes.word_select(rx_burst_byte[:2], 8).eq(
                                             char.data)]
                            with m.If(rx_burst_byte == 4):
                                m.d.comb += collect_port.en.eq(1)
                                m.d.sync += rx_burst_count.eq(rx_burst_count + 1)
            with m.State("BURST_CHECK_LOW"):
                with m.If(take):
                    with m.If(char.k | char_bad):
                        burst_char_error()
                    with m.Else():
                        m.d.sync += rx_burst_crc_low.eq(char.data)
                        m.next = "BURST_CHECK_HIGH"
            with m.State("BURST_CHECK_HIGH"):
                with m.If(take):
                    with m.If(char.k | char_bad):
                        burst_char_error()
                    with m.Else():
                        with m.If(burst_rx_crc.crc == Cat(rx_burst_crc_low, char.data)):
                            m.d.comb += burst_good.eq(1)
                        with m.Else():
                            m.d.comb += frame_error.eq(1)
                        m.next = "HUNT"
        with m.If(frame_error):
            m.d.sync += counters.crc_errors.eq(counters.crc_errors + 1)

        good = Signal()
        # DISPATCH is the state after CHECK: track it with a register.
        in_dispatch = Signal()
        m.d.sync += in_dispatch.eq(rx_crc.start)
        m.d.comb += good.eq(in_dispatch & (rx_crc.crc == received_crc))

        header = rx_bytes[0:8]
        sequence = rx_bytes[8:16]
        with m.If(good & (rx_kind == kinds["ts"])):
            m.d.sync += [
                status.neighbour_index.eq(rx_bytes[0:8]),
                status.neighbour_index_valid.eq((rx_bytes[8:16] & _TS_INDEX_VALID) != 0),
                hears.eq(1),
                neighbour_hears.eq((rx_bytes[8:16] & _TS_HEARS) != 0),
            ]
            with m.If(fresh | ((rx_bytes[8:16] & _TS_FRESH) != 0)):
                m.d.sync += [rx_sequence.eq(rx_bytes[16:24]), nak_sent.eq(0)]
        m.d.comb += [
            lack_valid.eq(good & (rx_kind == kinds["link_ack"])),
            lack_seq.eq(rx_bytes[0:8]),
            lack_nak.eq((rx_bytes[8:16] & _NAK) != 0),
        ]
        sequenced = good & up & ((rx_kind == kinds["word"]) | (rx_kind == kinds["slot_ack"]))
        is_word = rx_kind == kinds["word"]
        delivering = Signal()           # a burst frame's words are being delivered
        output_busy = Mux(is_word, self.rx_words.valid | delivering, self.rx_slot_acks.valid)
        gap = Signal(8)
        m.d.comb += gap.eq(sequence - rx_sequence)
        with m.If(self.rx_words.ready):
            m.d.sync += self.rx_words.valid.eq(0)
        with m.If(self.rx_slot_acks.ready):
            m.d.sync += self.rx_slot_acks.valid.eq(0)
        with m.If(sequenced):
            m.d.sync += ack_pending.eq(1)
            with m.If((gap == 0) & ~output_busy):
                m.d.sync += [rx_sequence.eq(rx_sequence + 1), nak_sent.eq(0),
                             counters.frames_received.eq(counters.frames_received + 1)]
                with m.If(link_ack_sent):
                    m.d.sync += rx_unacknowledged.eq(1)
                with m.Elif(rx_unacknowledged != window):
                    m.d.sync += rx_unacknowledged.eq(rx_unacknowledged + 1)
                with m.If(is_word):
                    m.d.sync += [
                        self.rx_words.valid.eq(1),
                        self.rx_words.payload.word.eq(header[0:4]),
                        self.rx_words.payload.slot.eq(header[4:6]),
                        self.rx_words.payload.direction.eq(header[6]),
                        self.rx_words.payload.data.eq(rx_bytes[16:48]),
                    ]
                with m.Else():
                    m.d.sync += [
                        self.rx_slot_acks.valid.eq(1),
                        self.rx_slot_acks.payload.slot.eq(header[4:6]),
                        self.rx_slot_acks.payload.direction.eq(header[6]),
                    ]
            with m.Elif((gap != 0) & (gap < 128) & ~nak_sent):
                m.d.sync += nak_pending.eq(1)
        self._elaborate_burst_delivery(
            m, burst_good & up, delivering, rx_sequence, rx_burst_sequence, rx_burst_count,
            collect_bank, deliver_port, ack_pending, nak_pending, nak_sent, link_ack_sent,
            rx_unacknowledged)

        # ---- Link-down ----------------------------------------------------------------------
        with m.If((silence == self._down_timeout)
                  | (good & (rx_kind == kinds["ts"]) & up
                     & ((rx_bytes[8:16] & _TS_HEARS) == 0))):
            m.d.sync += [hears.eq(0), neighbour_hears.eq(0), ack_pending.eq(0),
                         nak_pending.eq(0)]
        return m


    def _elaborate_burst_delivery(self, m, accept, delivering, rx_sequence, sequence, count,
                                  collect_bank, deliver_port, ack_pending, nak_pending,
                                  nak_sent, link_ack_sent, rx_unacknowledged):
        """A good burst frame: take the words from ``rx_sequence`` on (a repeat may overlap
        what was taken), NAK a gap, and deliver the words one per cycle from the RAM half
        they were collected in, while the next frame is collected into the other half. A
        frame that ends while the previous one is still delivered is dropped (repeated)."""
        window = self._window
        counters = self.counters
        offset = Signal(8)              # words of the frame the receiver already took
        taken = Signal(range(MAX_BURST + 1))
        deliver_bank = Signal()
        deliver_index = Signal(range(MAX_BURST + 1))
        deliver_end = Signal(range(MAX_BURST + 1))
        header = deliver_port.data[:8]
        m.d.comb += [offset.eq(rx_sequence - sequence), taken.eq(count - offset),
                     deliver_port.addr.eq(Cat(deliver_index[:4], deliver_bank))]
        with m.If(accept):
            m.d.sync += ack_pending.eq(1)
            with m.If((offset < count) & ~delivering):
                m.d.sync += [
                    rx_sequence.eq(sequence + count), nak_sent.eq(0),
                    counters.frames_received.eq(counters.frames_received + taken),
                    delivering.eq(1), deliver_bank.eq(collect_bank),
                    collect_bank.eq(~collect_bank), deliver_index.eq(offset),
                    deliver_end.eq(count),
                ]
                unacknowledged = Mux(link_ack_sent, 0, rx_unacknowledged) + taken
                m.d.sync += rx_unacknowledged.eq(Mux(unacknowledged > window, window,
                                                     unacknowledged))
            with m.Elif((offset >= 128) & ~nak_sent):
                # The frame starts beyond the next expected word: a gap.
                m.d.sync += nak_pending.eq(1)
        with m.If(delivering & (~self.rx_words.valid | self.rx_words.ready)):
            m.d.sync += [
                self.rx_words.valid.eq(1),
                self.rx_words.payload.word.eq(header[0:4]),
                self.rx_words.payload.slot.eq(header[4:6]),
                self.rx_words.payload.direction.eq(header[6]),
                self.rx_words.payload.data.eq(deliver_port.data[8:]),
                deliver_index.eq(deliver_index + 1),
            ]
            with m.If(deliver_index + 1 == deliver_end):
                m.d.sync += delivering.eq(0)


class NeighbourLink(wiring.Component):
    """One neighbour link: :class:`LinkLayer`, the PHYs and the receive clock-domain crossing.

    The board top instantiates the I/O (``docs/link.md``): per direction a data pin and a
    forwarded clock pin; ``tx`` to an ``io.DDRBuffer("o")`` clocked by ``sync`` (``tx[0]``
    first), the forwarded clock from a second DDR output driving (1, 0); on the receive side
    the forwarded clock input defines the clock domain ``rx_domain`` and an
    ``io.DDRBuffer("i")`` in that domain drives ``rx``.

    Parameters
    ----------
    bits : int
        Bits per cycle of ``tx`` and ``rx`` (1, 2 or 5; 2 for DDR I/O).
    rx_domain : str
        Clock domain of ``rx`` (the forwarded clock). ``"sync"`` leaves out the crossing (a
        loopback or a simulation with one clock).
    **link_parameters
        ``window``, ``ack_timeout``, ``down_timeout``, ``burst`` of :class:`LinkLayer`.

    Members
    -------
    tx : Out(bits)
        Serial output (``sync`` domain).
    rx : In(bits)
        Serial input (``rx_domain``).
    tx_words, tx_slot_acks, rx_words, rx_slot_acks, board_index, board_index_valid, status,
    counters
        As :class:`LinkLayer`.

    Raises
    ------
    TypeError, ValueError
        For a bad ``bits``, ``rx_domain`` or link parameter.
    """

    def __init__(self, *, bits=2, rx_domain="rx", **link_parameters):
        _check_bits(bits)
        if bits == 10:
            raise ValueError("Bits per cycle must be 1, 2 or 5 for a NeighbourLink, not 10: its "
                             "link layer takes a character per cycle at most and pauses 2 "
                             "cycles per frame, so it needs at least 2 cycles per symbol")
        if not isinstance(rx_domain, str) or not rx_domain:
            raise TypeError(f"Receive domain must be a domain name, not {rx_domain!r}")
        self._bits = bits
        self._rx_domain = rx_domain
        self._link = LinkLayer(**link_parameters)
        super().__init__({**_link_members(), "tx": Out(bits), "rx": In(bits)})

    def elaborate(self, platform):
        m = Module()
        m.submodules.link = link = self._link
        m.submodules.tx_phy = tx_phy = TransmitPHY(self._bits)
        rx_phy = ReceivePHY(self._bits)
        width = len(rx_phy.chars.payload.as_value())
        wiring.connect(m, link.tx_chars, tx_phy.chars)
        m.d.comb += self.tx.eq(tx_phy.tx)
        for name in ("tx_words", "tx_slot_acks"):
            wiring.connect(m, wiring.flipped(getattr(self, name)), getattr(link, name))
        for name in ("rx_words", "rx_slot_acks"):
            wiring.connect(m, getattr(link, name), wiring.flipped(getattr(self, name)))
        m.d.comb += [
            link.board_index.eq(self.board_index),
            link.board_index_valid.eq(self.board_index_valid),
            self.status.eq(link.status),
            self.counters.eq(link.counters),
        ]
        if self._rx_domain == "sync":
            m.submodules.rx_phy = rx_phy
            # The parser pauses two cycles per frame: a small FIFO keeps the characters.
            m.submodules.crossing = fifo = SyncFIFOBuffered(width=width, depth=4)
            m.d.comb += link.rx_aligned.eq(rx_phy.aligned)
        else:
            m.submodules.rx_phy = DomainRenamer({"sync": self._rx_domain})(rx_phy)
            m.submodules.crossing = fifo = AsyncFIFO(
                width=width, depth=8, w_domain=self._rx_domain, r_domain="sync")
            m.submodules.aligned_sync = FFSynchronizer(rx_phy.aligned, link.rx_aligned)
        m.d.comb += [
            rx_phy.rx.eq(self.rx),
            fifo.w_data.eq(rx_phy.chars.payload),
            fifo.w_en.eq(rx_phy.chars.valid),
            link.rx_chars.valid.eq(fifo.r_rdy),
            link.rx_chars.payload.eq(fifo.r_data),
            fifo.r_en.eq(link.rx_chars.ready),
        ]
        return m
