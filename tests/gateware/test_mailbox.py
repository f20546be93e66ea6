"""The neighbour mailbox: message layout, present/full/empty handshake, block-RAM reads.

Amaranth-simulator tests of :class:`linkdyn.gateware.mailbox.Mailbox`: a sender writes words, a
receiver polls ``present`` and reads them one cycle after addressing them, and acknowledges the
slot. Random traffic (fixed seeds) is checked cycle by cycle against a Python model of the
handshake; edge cases: a write and an acknowledge of the same slot in one cycle (the write
wins), slots independent of each other, the first read of a slot after its acknowledge.
"""

import gc
import random
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from linkdyn.gateware.mailbox import DIRECTIONS, Mailbox, message_layout
from linkdyn.model.golden import microprogram

from support import REPOSITORY

REGISTERS = microprogram().registers


def simulate(dut, bench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()


def test_message_layouts_are_the_register_maps_messages():
    forward = message_layout("forward")
    backward = message_layout("backward")
    assert forward == REGISTERS.forward_message and len(forward) == 9
    assert backward == REGISTERS.backward_message and len(backward) == 6
    # Sender registers are outputs of the proximal (distal) node, receivers its neighbour's
    # mailbox registers, word for word in address order.
    assert [REGISTERS[s].kind for s, _ in forward] == ["forward_out"] * 9
    assert [REGISTERS[r].kind for _, r in forward] == ["forward_in"] * 9
    assert [REGISTERS[s].kind for s, _ in backward] == ["backward_out"] * 6
    assert [REGISTERS[r].kind for _, r in backward] == ["backward_in"] * 6
    for layout in (forward, backward):
        addresses = [REGISTERS[r].address for _, r in layout]
        assert addresses == sorted(addresses)
    with pytest.raises(ValueError, match="Direction"):
        message_layout("sideways")
    assert DIRECTIONS == ("forward", "backward")


@pytest.mark.parametrize("words, slots, error", [
    (0, 1, ValueError), (17, 1, ValueError), (9, 0, ValueError), (9, 5, ValueError),
    (9.0, 1, TypeError), (9, True, TypeError)])
def test_mailbox_rejects_bad_sizes(words, slots, error):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(error, match="count"):
            Mailbox(words, slots)
        gc.collect()


def test_words_are_present_the_cycle_after_their_write_and_read_back():
    box = Mailbox(9, 2)
    seen = {}

    async def bench(ctx):
        sender, receiver = box.sender, box.receiver
        assert ctx.get(sender.empty) == 0b11 and ctx.get(receiver.full) == 0
        ctx.set(receiver.slot, 1)
        ctx.set(receiver.word, 4)
        assert not ctx.get(receiver.present)
        ctx.set(sender.valid, 1)
        ctx.set(sender.payload, {"slot": 1, "word": 4, "data": -123456})
        assert not ctx.get(receiver.present), "present only after the write's clock edge"
        await ctx.tick()
        ctx.set(sender.valid, 0)
        assert ctx.get(receiver.present)
        assert ctx.get(sender.empty) == 0b01, "slot 1 is no longer empty, slot 0 still is"
        await ctx.tick()  # the address of this cycle is read at this edge
        seen["word"] = ctx.get(receiver.data)
        ctx.set(receiver.slot, 0)
        assert not ctx.get(receiver.present), "slot 0 has no word 4"
        # Fill slot 1 completely: full.
        for word in range(9):
            ctx.set(sender.valid, 1)
            ctx.set(sender.payload, {"slot": 1, "word": word, "data": word * 1000})
            await ctx.tick()
        ctx.set(sender.valid, 0)
        assert ctx.get(receiver.full) == 0b10
        assert ctx.get(receiver.words_present[1]) == 0x1FF
        # Acknowledge: empty again, nothing present, the data stays in the RAM.
        ctx.set(box.ack.valid, 1)
        ctx.set(box.ack.slot, 1)
        await ctx.tick()
        ctx.set(box.ack.valid, 0)
        assert ctx.get(sender.empty) == 0b11 and ctx.get(receiver.full) == 0
        ctx.set(receiver.slot, 1)
        ctx.set(receiver.word, 8)
        assert not ctx.get(receiver.present)
        await ctx.tick()
        seen["stale"] = ctx.get(receiver.data)

    simulate(box, bench)
    assert seen == {"word": -123456, "stale": 8000}


def test_a_write_in_the_cycle_of_the_acknowledge_wins():
    box = Mailbox(6, 1)
    flags = []

    async def bench(ctx):
        for word in (0, 1):
            ctx.set(box.sender.valid, 1)
            ctx.set(box.sender.payload, {"word": word, "data": 7})
            await ctx.tick()
        ctx.set(box.ack.valid, 1)
        ctx.set(box.sender.payload, {"word": 5, "data": 7})
        await ctx.tick()
        ctx.set(box.ack.valid, 0)
        ctx.set(box.sender.valid, 0)
        flags.append(ctx.get(box.receiver.words_present[0]))

    simulate(box, bench)
    assert flags == [0b100000]


@pytest.mark.parametrize("words, slots, seed", [(9, 1, 1), (9, 2, 2), (6, 4, 3), (6, 2, 4)])
def test_random_traffic_matches_the_handshake_model(words, slots, seed):
    """Random writes, reads and acknowledges, every cycle checked against a model; the sender
    only writes into slots it owns (empty or being filled), the receiver acknowledges only
    slots it has seen full."""
    box = Mailbox(words, slots)
    rng = random.Random(seed)
    errors = []

    async def bench(ctx):
        present = [[False] * words for _ in range(slots)]
        memory = [[0] * words for _ in range(slots)]
        filling = [False] * slots       # the sender owns the slot until it is full
        for cycle in range(3000):
            # Check the model against the outputs of this cycle (before driving).
            for slot in range(slots):
                if bool(ctx.get(box.sender.empty) >> slot & 1) != (not any(present[slot])):
                    errors.append((cycle, "empty", slot))
                if bool(ctx.get(box.receiver.full) >> slot & 1) != all(present[slot]):
                    errors.append((cycle, "full", slot))
            # Drive the receiver side.
            read_slot, read_word = rng.randrange(slots), rng.randrange(words)
            ctx.set(box.receiver.slot, read_slot)
            ctx.set(box.receiver.word, read_word)
            if ctx.get(box.receiver.present) != present[read_slot][read_word]:
                errors.append((cycle, "present", read_slot, read_word))
            ack = None
            full = [slot for slot in range(slots) if all(present[slot])]
            if full and rng.random() < 0.3:
                ack = rng.choice(full)
            ctx.set(box.ack.valid, ack is not None)
            ctx.set(box.ack.slot, ack or 0)
            # Drive the sender side.
            write = None
            owned = [slot for slot in range(slots)
                     if (not any(present[slot]) or filling[slot]) and slot != ack]
            if owned and rng.random() < 0.6:
                slot = rng.choice(owned)
                missing = [w for w in range(words) if not present[slot][w]]
                word = rng.choice(missing) if missing else rng.randrange(words)
                write = (slot, word, rng.randrange(-(1 << 31), 1 << 31))
            ctx.set(box.sender.valid, write is not None)
            if write is not None:
                ctx.set(box.sender.payload, dict(zip(("slot", "word", "data"), write)))
            await ctx.tick()
            # The read port returns the word as it was before this edge's write.
            if ctx.get(box.receiver.data) != memory[read_slot][read_word]:
                errors.append((cycle, "read_data", read_slot, read_word))
            if ack is not None:
                present[ack] = [False] * words
                filling[ack] = False
            if write is not None:
                slot, word, data = write
                memory[slot][word] = data
                present[slot][word] = True
                filling[slot] = not all(present[slot])

    simulate(box, bench)
    assert errors == []


def test_docs_show_the_message_tables_of_the_register_map():

    from linkdyn.gateware.mailbox import message_table

    text = (REPOSITORY / "docs" / "chain.md").read_text()
    for direction in DIRECTIONS:
        assert message_table(direction) in text, f"docs/chain.md: {direction} table is stale"
