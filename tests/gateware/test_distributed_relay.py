"""Bus replies on their way to the base through a middle board (Amaranth simulator).

A middle board of a distributed chain sends upstream its own answers to the base's register
accesses and relays the replies of the boards behind it (``docs/distributed.md``, *The
register bus at board 0*). Both used to wait in one slot: a reply was lost when the board's
own answer and a relayed one came in the same cycle, or when a second reply came while the
first still waited for the upstream link (down, or its FIFO full); the base then waited its
whole timeout (65,536 cycles) and the host got a timeout error. Two replies are on their way
at once after the base gave an access up (a link cut under it) and its late reply comes while
the next access's does. Here a middle board's core (``ActuatorCore(base=False, last=False)``)
sits between two neighbour links driven by the testbench (the base's and board 2's side), so
the replies can be timed to the cycle:

- its own answer (a read of its link window, answered the cycle after the request arrives)
  and a reply from board 2 arriving in the same cycle, and at every offset around it: both
  reach the base side, each once, with its tag and word (fails without the fix: the relayed
  one is lost at the offset where they meet);
- three replies from board 2 while the link to the base is down: all three reach the base
  side after the restore, each once, in order (fails without the fix: only the last does).
"""

from amaranth.hdl import Elaboratable, Module, Mux, Signal
from amaranth.sim import Simulator

from linkdyn.gateware.actuator import LINK_BURST, LINK_WINDOW, LINK_WORDS, ActuatorCore
from linkdyn.gateware.link import NeighbourLink

BITS = 5
REQUEST, REPLY, ERROR = (LINK_WORDS[k] for k in ("BUS_REQUEST", "BUS_REPLY", "BUS_ERROR"))


class _MiddleBoard(Elaboratable):
    """Board 1 of a chain, its neighbours' link ports in the testbench's hands: ``base`` (the
    base board's downstream link, index 0) and ``behind`` (board 2's upstream link);
    ``cut``: the lines between ``base`` and board 1 carry 0."""

    def __init__(self):
        self.core = ActuatorCore(base=False, last=False, bits=BITS)
        self.base = NeighbourLink(bits=BITS, rx_domain="sync", burst=LINK_BURST["down"])
        self.behind = NeighbourLink(bits=BITS, rx_domain="sync", burst=LINK_BURST["up"])
        self.cut = Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        m.submodules.base = base = self.base
        m.submodules.behind = behind = self.behind
        m.d.comb += [
            core.up_rx.eq(Mux(self.cut, 0, base.tx)), base.rx.eq(Mux(self.cut, 0, core.up_tx)),
            behind.rx.eq(core.down_tx),
            base.board_index.eq(0), base.board_index_valid.eq(1),
            behind.board_index.eq(2), behind.board_index_valid.eq(1),
            base.rx_words.ready.eq(1), base.rx_slot_acks.ready.eq(1),
            behind.rx_words.ready.eq(1), behind.rx_slot_acks.ready.eq(1),
        ]
        # One cycle more on the line from board 2: its characters reach board 1 in the other
        # phase of the character clock than the base's (else the answer to a request, one
        # cycle after it, could never meet a reply in the same cycle).
        line = Signal.like(behind.tx)
        m.d.sync += line.eq(behind.tx)
        m.d.comb += core.down_rx.eq(line)
        return m


def _simulate(bench, dut):
    """Run ``bench(ctx, replies, cycle)`` with a watcher that collects every reply word the
    base side receives as ``(cycle, tag, word, data)`` (``cycle[0]``: the cycles so far)."""
    replies = []
    cycle = [0]

    async def watch(ctx):
        async for _, _, valid, payload in ctx.tick().sample(dut.base.rx_words.valid,
                                                            dut.base.rx_words.payload):
            cycle[0] += 1
            if valid and payload.direction == 1 and payload.word in (REPLY, ERROR):
                replies.append((cycle[0], int(payload.slot), int(payload.word),
                                int(payload.data)))

    sim = Simulator(dut)
    sim.add_clock(1e-8)

    async def run(ctx):
        await bench(ctx, replies, cycle)

    sim.add_testbench(run)
    sim.add_testbench(watch, background=True)
    sim.run()
    return replies


async def _links_up(ctx, dut, limit=5_000):
    for _ in range(limit):
        await ctx.tick()
        if ctx.get(dut.core.upstream.status.up) and ctx.get(dut.core.downstream.status.up) \
                and ctx.get(dut.core.board_index_valid):
            return
    raise AssertionError("the links did not come up")


def _set_word(ctx, port, direction, word, tag, data):
    ctx.set(port.valid, 1)
    ctx.set(port.payload.direction, direction)
    ctx.set(port.payload.word, word)
    ctx.set(port.payload.slot, tag)
    ctx.set(port.payload.data, data)


async def _trial(ctx, dut, cycle, replies, request_at, reply_at, *, cycles=240):
    """Offer board 1 a read of its link window (tag 0) from the base side at cycle
    ``request_at`` and a reply (tag 1) from board 2's side at ``reply_at`` (None: none).
    Return the cycles board 1 took the request and the reply in (from its links), and the
    replies the base side got meanwhile."""
    core = dut.core
    start = cycle[0]
    offered = {"request": False, "reply": reply_at is None}
    taken = {"request": None, "reply": None}
    for t in range(cycles):
        if t == request_at:
            _set_word(ctx, dut.base.tx_words, 0, REQUEST, 0, 1 | LINK_WINDOW << 8)
        if t == reply_at:
            _set_word(ctx, dut.behind.tx_words, 1, REPLY, 1, RELAYED)
        _, _, base_ready, behind_ready, up_valid, up_word, down_valid, down_ready, \
            down_word = await ctx.tick().sample(
                dut.base.tx_words.ready, dut.behind.tx_words.ready,
                core.upstream.rx_words.valid, core.upstream.rx_words.payload.word,
                core.downstream.rx_words.valid, core.downstream.rx_words.ready,
                core.downstream.rx_words.payload.word)
        if t >= request_at and base_ready and not offered["request"]:
            ctx.set(dut.base.tx_words.valid, 0)
            offered["request"] = True
        if reply_at is not None and t >= reply_at and behind_ready and not offered["reply"]:
            ctx.set(dut.behind.tx_words.valid, 0)
            offered["reply"] = True
        if up_valid and up_word == REQUEST and taken["request"] is None:
            taken["request"] = t
        if down_valid and down_ready and down_word == REPLY and taken["reply"] is None:
            taken["reply"] = t
    return taken, [r[1:] for r in replies if r[0] > start]


RELAYED = 0xC0FFEE


def _own_answer_ok(reply, index=1):
    """Board 1's answer to the window read: tag 0, BUS_REPLY, its status word (link up, the
    neighbour's index 0 known, its own index)."""
    tag, word, data = reply
    return tag == 0 and word == REPLY and data & 1 and (data >> 16) & 1 and data >> 24 == index


def test_own_answer_and_relayed_reply_in_one_cycle_both_reach_the_base():
    """Board 1 answers a read of its link window in the cycle after the request arrives;
    board 2's reply is timed to arrive at board 1 from 4 cycles before that answer to 4
    after. At every offset both reach the base side, each once, with its tag and word; at one
    offset (or more) they meet in one cycle."""
    dut = _MiddleBoard()
    results = []

    async def bench(ctx, replies, cycle):
        await _links_up(ctx, dut)
        # How long the request and the reply take to reach board 1, offered together.
        taken, _ = await _trial(ctx, dut, cycle, replies, 0, 0)
        lead = taken["request"] + 1 - taken["reply"]      # reply offset that meets the answer
        for offset in range(-4, 5):
            delay = lead + offset
            request_at, reply_at = max(0, -delay), max(0, delay)
            results.append((offset,) + await _trial(ctx, dut, cycle, replies, request_at,
                                                    reply_at))

    _simulate(bench, dut)
    met = 0
    for offset, taken, got in results:
        assert None not in taken.values(), (offset, taken)
        meeting = taken["reply"] - taken["request"] - 1     # 0: the answer and the reply meet
        met += meeting == 0
        own = [r for r in got if r[0] == 0]
        other = [r for r in got if r[0] == 1]
        assert len(own) == 1 and _own_answer_ok(own[0]), (offset, meeting, got)
        assert other == [(1, REPLY, RELAYED)], (offset, meeting, got)
    assert met, [(o, t) for o, t, _ in results]


def test_replies_relayed_while_the_upstream_link_is_down_all_arrive_after_the_restore():
    """The link from board 1 to the base is cut; once board 1 sees it down, board 2's side
    sends three replies (tags 1, 2, 3). After the restore the base side gets all three, each
    once, in order, and board 1 answers a read of its window again."""
    dut = _MiddleBoard()
    core = dut.core
    words = [(1, 0x111111), (2, 0x222222), (3, 0x333333)]
    seen = {}

    async def bench(ctx, replies, cycle):
        await _links_up(ctx, dut)
        ctx.set(dut.cut, 1)
        for _ in range(2_000):
            await ctx.tick()
            if not ctx.get(core.upstream.status.up):
                break
        else:
            raise AssertionError("board 1 did not see its upstream link down")
        for tag, data in words:
            _set_word(ctx, dut.behind.tx_words, 1, REPLY, tag, data)
            for _ in range(200):
                _, _, ready = await ctx.tick().sample(dut.behind.tx_words.ready)
                if ready:
                    break
            ctx.set(dut.behind.tx_words.valid, 0)
        for _ in range(300):
            await ctx.tick()
        seen["during_cut"] = list(replies)
        ctx.set(dut.cut, 0)
        for _ in range(20_000):
            await ctx.tick()
            if len(replies) >= len(words):
                break
        for _ in range(500):            # nothing more comes
            await ctx.tick()
        seen["after"] = [r[1:] for r in replies]
        _, got = await _trial(ctx, dut, cycle, replies, 0, None)
        seen["window"] = got

    _simulate(bench, dut)
    assert seen["during_cut"] == []
    assert seen["after"] == [(tag, REPLY, data) for tag, data in words], seen["after"]
    assert len(seen["window"]) == 1 and _own_answer_ok(seen["window"][0]), seen["window"]
