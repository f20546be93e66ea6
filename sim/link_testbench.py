"""Two :class:`~linkdyn.gateware.link.NeighbourLink` boards joined by a line model, in the
Amaranth simulator.

Used by ``tests/gateware/test_link.py`` and :mod:`linkdyn.bench.link`. :class:`Line` carries one
direction's bits with a delay, flips bits at a bit-error rate and cuts the line (the receiver
sees 0) between given cycles, counting the bits it flipped; :class:`Pair` is board A (index 0)
and board B (which takes A's index + 1); :func:`run_pair` runs them with testbenches that send
(:func:`send_items`), collect (:func:`collect`) and watch the link state (:func:`watch_up`).
"""

import random

from amaranth import Elaboratable, Module
from amaranth.hdl import DomainRenamer, ResetInserter, Signal
from amaranth.sim import Simulator

from linkdyn.gateware.link import LinkCounters, NeighbourLink

__all__ = ["Line", "Pair", "random_words", "send_items", "collect", "watch_up", "run_pair",
           "read_counters"]


class Line:
    """One direction of the line: delay, bit errors, cuts.

    Parameters
    ----------
    delay : int
        Cycles (of the sender's clock) from ``tx`` to ``rx``.
    ber : float
        Probability that a bit is flipped.
    cuts : list of (int, int)
        Cycle ranges ``[start, end)`` during which the receiver sees 0.
    seed : int
        Seed of the bit errors (and of the noise).
    noise : list of (int, int)
        Cycle ranges ``[start, end)`` during which the receiver sees random bits instead of the
        signal (a receiver fed with garbage).

    Attributes
    ----------
    flipped : int
        Bits flipped so far.
    """

    def __init__(self, delay=8, ber=0.0, cuts=(), seed=0, noise=()):
        self.delay, self.ber, self.cuts, self.noise = delay, ber, list(cuts), list(noise)
        self.rng = random.Random(seed)
        self.flipped = 0

    def cut(self, cycle):
        """Return whether the line is cut in ``cycle``."""
        return any(start <= cycle < end for start, end in self.cuts)

    def process(self, tx, rx, domain, bits):
        """Return the testbench that drives ``rx`` from ``tx``, ticking on ``domain``."""
        async def line(ctx):
            await self.run(ctx, tx, rx, domain, bits)
        return line

    async def run(self, ctx, tx, rx, domain, bits):
        """Drive ``rx`` from ``tx`` forever (a background testbench's body)."""
        pipe = [0] * self.delay
        cycle = 0
        async for _, _, value in ctx.tick(domain).sample(tx):
            pipe.append(value)
            out = pipe.pop(0)
            if any(start <= cycle < end for start, end in self.noise):
                out = self.rng.getrandbits(bits)
            elif self.ber:
                for bit in range(bits):
                    if self.rng.random() < self.ber:
                        out ^= 1 << bit
                        self.flipped += 1
            if self.cut(cycle):
                out = 0
            ctx.set(rx, out)
            cycle += 1


class Pair(Elaboratable):
    """Board A (index 0) and board B (takes A's index + 1), each with a link to the other.

    With ``two_clocks`` A runs on domain ``a`` and B on ``b`` (different periods), each
    receiving in the other's clock through the asynchronous FIFO, as with forwarded clocks.
    With ``reset_b`` (one clock only), the signal ``b_reset`` resets board B's link.
    """

    def __init__(self, two_clocks=False, bits=2, reset_b=False, **parameters):
        if reset_b and two_clocks:
            raise ValueError("reset_b needs one clock")
        self.two_clocks = two_clocks
        self.b_reset = Signal() if reset_b else None
        domain = "rx" if two_clocks else "sync"
        self.a = NeighbourLink(bits=bits, rx_domain=domain, **parameters)
        self.b = NeighbourLink(bits=bits, rx_domain=domain, **parameters)

    def elaborate(self, platform):
        m = Module()
        if self.two_clocks:
            m.submodules.a = DomainRenamer({"sync": "a", "rx": "b"})(self.a)
            m.submodules.b = DomainRenamer({"sync": "b", "rx": "a"})(self.b)
        else:
            m.submodules.a = self.a
            m.submodules.b = (self.b if self.b_reset is None
                              else ResetInserter(self.b_reset)(self.b))
        m.d.comb += [
            self.a.board_index.eq(0),
            self.a.board_index_valid.eq(1),
            self.b.board_index.eq(self.b.status.neighbour_index + 1),
            self.b.board_index_valid.eq(self.b.status.neighbour_index_valid),
        ]
        return m


def random_words(rng, count, direction):
    """Return ``count`` random words (payload dicts of ``WordLayout``) of one direction."""
    return [{"direction": direction, "slot": rng.getrandbits(2), "word": rng.randrange(9),
             "data": rng.getrandbits(32)} for _ in range(count)]


def send_items(link, words, domain):
    """Return a testbench that offers each item to the link, back to back: a word (a dict with
    ``"word"``) to ``tx_words``, a slot acknowledge to ``tx_slot_acks``."""
    async def send(ctx):
        for item in words:
            stream = link.tx_slot_acks if "word" not in item else link.tx_words
            ctx.set(stream.payload, item)
            ctx.set(stream.valid, 1)
            await ctx.tick(domain).until(stream.ready)
            ctx.set(stream.valid, 0)
    return send


def collect(link, out, domain, rng=None, times=None):
    """Return a testbench appending every word and slot acknowledge delivered to ``out`` (and
    the cycle of each to ``times``); with ``rng``, ``rx_words.ready`` is low 20 % of cycles."""
    async def run(ctx):
        cycle = 0
        ctx.set(link.rx_slot_acks.ready, 1)
        async for _, _, valid, payload, ack_valid, ack in ctx.tick(domain).sample(
                link.rx_words.valid, link.rx_words.payload,
                link.rx_slot_acks.valid, link.rx_slot_acks.payload):
            ready = ctx.get(link.rx_words.ready)
            if valid and ready:
                out.append({"direction": payload.direction, "slot": payload.slot,
                            "word": payload.word, "data": payload.data})
                if times is not None:
                    times.append(cycle)
            cycle += 1
            if ack_valid:
                out.append({"direction": ack.direction, "slot": ack.slot})
            # Random back-pressure on the words: a node that is busy for a cycle.
            ctx.set(link.rx_words.ready, 1 if rng is None else int(rng.random() < 0.8))
    return run


def watch_up(link, log, domain):
    """Return a testbench logging ``(cycle, up)`` at every change of ``status.up``."""
    async def watch(ctx):
        cycle = 0
        async for _, _, up in ctx.tick(domain).sample(link.status.up):
            if not log or log[-1][1] != up:
                log.append((cycle, up))
            cycle += 1
    return watch


def run_pair(pair, lines, testbenches, cycles, background=()):
    """Simulate a :class:`Pair` with its two :class:`Line` s until every testbench returned.

    Clocks: 10 ns (one clock), or A 10 ns and B 10.03 ns (two clocks).

    Raises
    ------
    AssertionError
        If the testbenches have not returned within ``cycles`` cycles of A's clock.
    """
    sim = Simulator(pair)
    domains = ("a", "b") if pair.two_clocks else ("sync", "sync")
    if pair.two_clocks:
        sim.add_clock(10e-9, domain="a")
        sim.add_clock(10.03e-9, domain="b")     # 3000 ppm apart
    else:
        sim.add_clock(10e-9)
    bits = len(pair.a.tx)
    line_ab, line_ba = lines
    sim.add_testbench(line_ab.process(pair.a.tx, pair.b.rx, domains[0], bits), background=True)
    sim.add_testbench(line_ba.process(pair.b.tx, pair.a.rx, domains[1], bits), background=True)
    for testbench in background:
        sim.add_testbench(testbench, background=True)
    finished = []
    for testbench in testbenches:
        async def run(ctx, testbench=testbench):
            await testbench(ctx)
            finished.append(testbench)
        sim.add_testbench(run)

    async def limit(ctx):
        for _ in range(cycles):
            if len(finished) == len(testbenches):
                return
            await ctx.tick(domains[0])
        raise AssertionError(f"not finished within {cycles} cycles")
    sim.add_testbench(limit)
    sim.run()
    return sim


async def read_counters(ctx, link):
    """Return the link's counters as a dict (name -> value)."""
    return {name: ctx.get(getattr(link.counters, name)) for name, _ in LinkCounters}
