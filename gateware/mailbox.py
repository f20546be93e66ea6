"""Neighbour mailboxes: one dual-port block RAM per hop and direction (source paper Sect. 3.1).

A :class:`Mailbox` carries the messages of one hop in one direction of a chain of LinkDyn
nodes: node i's ``omega, omega_dot, p_ddot`` to node i+1 (the *forward* mailbox, 9 words), or
node i+1's ``f_out, mu_out`` to node i (the *backward* mailbox, 6 words). The layouts are
:attr:`~linkdyn.model.microprogram.RegisterMap.forward_message` and
:attr:`~linkdyn.model.microprogram.RegisterMap.backward_message`, word for word (see
:func:`message_layout` and ``docs/chain.md``).

The mailbox has ``slots`` message slots (one per register bank of the nodes: a pipelined chain
has several samples in flight). The sender side writes words into a slot as its MAC produces them;
every word written sets the word's *present* bit (the per-word trigger), and a slot whose words
are all present is *full*. The receiver side reads words through a synchronous read port,
checks the present bit of the word it addresses (a node stalls on a word that is not there
yet), and *acknowledges* the slot when it has read the message, which clears every present bit
of the slot: the slot is *empty* again and the sender may fill it with its next message.

Handshake rules: the sender writes into a slot only while that slot is empty or partly written
by itself (never a slot the receiver has not acknowledged); the receiver acknowledges a slot
only after its last read of the message. An acknowledge and a write in the same cycle to the
same slot: the write wins (its word is present afterwards).
"""

from amaranth.hdl import Cat, Module, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from linkdyn.model.fixedpoint import WORD_WIDTH, ceil_log2
from linkdyn.model.microprogram import microprogram

__all__ = ["Mailbox", "DIRECTIONS", "message_layout", "message_table"]

#: Mailbox directions: ``"forward"`` (proximal to distal), ``"backward"`` (distal to proximal).
DIRECTIONS = ("forward", "backward")


def message_layout(direction, fmt=None):
    """Return the message of a mailbox direction, word by word.

    Parameters
    ----------
    direction : str
        ``"forward"`` or ``"backward"``.
    fmt : QFormat
        Word format of the nodes.

    Returns
    -------
    list of (str, str)
        ``(sender register, receiver register)`` per word, word 0 first
        (:attr:`~linkdyn.model.microprogram.RegisterMap.forward_message` /
        :attr:`~linkdyn.model.microprogram.RegisterMap.backward_message`).

    Raises
    ------
    ValueError
        If ``direction`` is not one of :data:`DIRECTIONS`.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"Direction must be one of {DIRECTIONS!r}, not {direction!r}")
    rmap = microprogram(fmt).registers
    return list(rmap.forward_message if direction == "forward" else rmap.backward_message)


def message_table(direction, fmt=None):
    """Return the Markdown table of a mailbox message (``docs/chain.md`` shows it).

    One row per word: index, the sender's register (its address in the node map), the
    receiver's register, the quantity with its frame (the sender register's documentation, in
    the sender's numbering: its own link is link i), unit and number format.
    """
    rmap = microprogram(fmt).registers
    lines = ["| word | sender register (address) | receiver register (address) | quantity, "
             "frame (sender's numbering) | unit | format |", "|---:|---|---|---|---|---|"]
    for word, (source, target) in enumerate(message_layout(direction, fmt)):
        reg = rmap[source]
        doc = reg.doc.replace(" (p_ddot includes -g)", "")
        lines.append(f"| {word} | `{source}` ({reg.address}) | `{target}` "
                     f"({rmap[target].address}) | {doc} | {reg.unit} | "
                     f"{rmap.qformat(source).name} ({reg.format.name}) |")
    return "\n".join(lines)


class Mailbox(wiring.Component):
    """One hop's mailbox in one direction: a block RAM with per-word present bits.

    Parameters
    ----------
    words : int
        Words per message (9 forward, 6 backward; see :func:`message_layout`).
    slots : int
        Message slots (1 for a sequential chain; a pipelined one has one per register bank).

    Members
    -------
    sender : In(Mailbox.SenderSignature(words, slots))
        The write side: ``valid`` writes ``payload.data`` to word ``payload.word`` of slot
        ``payload.slot`` (the word is present from the next cycle); ``empty``, per slot: no
        word is present (the sender may start a message).
    receiver : In(Mailbox.ReceiverSignature(words, slots))
        The read side: ``slot`` and ``word`` address a word, its ``data`` follows in the next
        cycle; ``present``: the word addressed is present (combinational); ``full``, per slot:
        every word is present (the whole message arrived); ``words_present``, per slot, the
        present bit of every word (``words_present[slot][word]``).
    ack : In(Mailbox.AckSignature(slots))
        The receiver's acknowledge: ``valid``, the message in slot ``slot`` has been read;
        clear the slot.

    Raises
    ------
    TypeError
        If ``words`` or ``slots`` is not an integer.
    ValueError
        If ``words`` is not 1 .. 16 or ``slots`` is not 1 .. 4.
    """

    class SenderSignature(wiring.Signature):
        """Signature of a mailbox's write side, from the sender's side.

        Members
        -------
        valid : Out(1)
            Write ``payload`` this cycle.
        payload : Out(data.StructLayout({"slot": range(slots), "word": range(words),
                                         "data": signed(32)}))
            The word written and where.
        empty : In(slots)
            Per slot: no word is present.
        """

        def __init__(self, words, slots):
            super().__init__({
                "valid": Out(1),
                "payload": Out(data.StructLayout({
                    "slot": range(slots), "word": range(words), "data": signed(WORD_WIDTH)})),
                "empty": In(slots),
            })

    class ReceiverSignature(wiring.Signature):
        """Signature of a mailbox's read side, from the receiver's side.

        Members
        -------
        slot : Out(range(slots))
            Slot of the word to read.
        word : Out(range(words))
            Word to read; its data follows in the next cycle.
        data : In(signed(32))
            The word addressed in the previous cycle.
        present : In(1)
            The word addressed is present (combinational).
        full : In(slots)
            Per slot: every word is present.
        words_present : In(data.ArrayLayout(words, slots))
            Per slot, the present bit of every word.
        """

        def __init__(self, words, slots):
            super().__init__({
                "slot": Out(range(slots)),
                "word": Out(range(words)),
                "data": In(signed(WORD_WIDTH)),
                "present": In(1),
                "full": In(slots),
                "words_present": In(data.ArrayLayout(words, slots)),
            })

    class AckSignature(wiring.Signature):
        """Signature of a mailbox's acknowledge, from the receiver's side.

        Members
        -------
        valid : Out(1)
            The message in slot ``slot`` has been read: clear the slot.
        slot : Out(range(slots))
        """

        def __init__(self, slots):
            super().__init__({"valid": Out(1), "slot": Out(range(slots))})

    def __init__(self, words, slots=1):
        for name, value, low, high in (("Word count", words, 1, 16), ("Slot count", slots, 1, 4)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name} must be an integer, not {value!r}")
            if not low <= value <= high:
                raise ValueError(f"{name} must be {low} .. {high}, not {value!r}")
        self._words = words
        self._slots = slots
        super().__init__({
            "sender": In(self.SenderSignature(words, slots)),
            "receiver": In(self.ReceiverSignature(words, slots)),
            "ack": In(self.AckSignature(slots)),
        })

    @property
    def words(self):
        """int: words per message."""
        return self._words

    @property
    def slots(self):
        """int: message slots."""
        return self._slots

    def elaborate(self, platform):
        m = Module()
        word_bits = ceil_log2(self._words)
        slot_bits = ceil_log2(self._slots)
        m.submodules.memory = memory = Memory(
            shape=signed(WORD_WIDTH), depth=self._slots << word_bits, init=[])
        write_port = memory.write_port()
        read_port = memory.read_port()
        write, receiver, ack = self.sender.payload, self.receiver, self.ack

        def address(slot, word):
            return Cat(word[:word_bits], slot[:slot_bits]) if slot_bits else word[:word_bits]

        m.d.comb += [
            write_port.en.eq(self.sender.valid),
            write_port.addr.eq(address(write.slot, write.word)),
            write_port.data.eq(write.data),
            read_port.addr.eq(address(receiver.slot, receiver.word)),
            receiver.data.eq(read_port.data),
        ]

        present = [Signal(self._words, name=f"present_{slot}") for slot in range(self._slots)]
        for slot, bits in enumerate(present):
            with m.If(ack.valid & (ack.slot == slot)):
                m.d.sync += bits.eq(0)
            with m.If(self.sender.valid & (write.slot == slot)):
                m.d.sync += bits.bit_select(write.word, 1).eq(1)
            m.d.comb += [
                self.sender.empty[slot].eq(~bits.any()),
                receiver.full[slot].eq(bits.all()),
                receiver.words_present[slot].eq(bits),
            ]
            with m.If(receiver.slot == slot):
                m.d.comb += receiver.present.eq(bits.bit_select(receiver.word, 1))
        return m
