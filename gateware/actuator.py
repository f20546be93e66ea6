"""The actuator board core of the distributed mode: one LinkDyn node per board, its inbound
mailboxes, a link to each neighbour board, the per-board scheduler (the sequential or the
pipelined policy, a build parameter) and the register-bus routing (``docs/distributed.md``;
source paper Sect. 3: one FPGA per actuator, a node talks only to its mechanical neighbours,
the host only to the base).

Structure of board k (no pins: the board top adds the I/O buffers of the two links)::

    upstream link (board k-1)                                 downstream link (board k+1)
      rx: forward message words ----> forward_in mailbox --+
          START, bus requests   ----> scheduler, router    |   node k   +--> tx: forward message
      tx: backward message words <-- node k's MAC results  |            |       words, START,
          slot acks, DONE, bus replies, link states        +------------+       bus requests
                                                  backward_in mailbox <---- rx: backward words,
                                                                             DONE, replies

The node, its mailboxes and their handshake are those of the single-FPGA chain
(:class:`~linkdyn.gateware.chain.LinkDynChain`, ``docs/chain.md``): the same message layout
and word order, per-word present bits and stalls, per-slot acknowledges. Only the transport
differs: the sender's MAC results that are message words go into the link
(:class:`~linkdyn.gateware.link.NeighbourLink`) and the receiving board writes them into its
local mailbox RAM; a slot acknowledge goes back over the link, and the sender keeps, per
outgoing message, "sent and not acknowledged".

The same link carries the chain's control, in word indices that no message uses
(:data:`LINK_WORDS`): START (an update starts; each board passes it on downstream), DONE
(board k and every board behind it finished their distal request, with their overflow bits),
bus requests (node, address, write, data) from the base towards board k and their replies,
and LINK_STATE (which hops behind a board are down). Boards learn their index at link-up
(the link's training frames); the base is board 0.

The base board (``base=True``) is the register-bus target of the protocol engine with the
chain's semantics (``docs/chain.md``, *The register bus*): the control block (CONTROL,
STATUS, OVERFLOW, OVERFLOW_STICKY, LATENCY_CYCLES, INTERVAL_CYCLES, UPDATE_COUNT,
RESULT_SELECT), the access rules, the mailbox-register redirection, and a timeout that answers
an access to a board beyond a broken link with ``error`` (refused as soon as LINK_DOWN shows
the link, also an access already under way; its tag is not reused until its late reply).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from linkdyn.model.fixedpoint import WORD_WIDTH
from linkdyn.model.fixedpoint import ceil_log2
from linkdyn.model.microprogram import BANKS, SEGMENTS, microprogram
from linkdyn.model.protocol import (
    CONTROLLER_BASE, CONTROL_CLEAR, CONTROL_NODE, CONTROL_START, MAX_NODES, RESULT_FOLLOW,
    RESULT_SELECT, ProtocolSpec, control_register,
)

from .bus import RegisterBusSignature
from .chain import POLICIES
from .link import NeighbourLink, WordLayout
from .mailbox import Mailbox, message_layout
from .node import REQUESTS, SLOT_OPS, LinkDynNode
from linkdyn.model.microprogram import node_formats

__all__ = ["ActuatorCore", "NodeTarget", "check_policy", "LINK_WORDS", "LINK_WINDOW",
           "LINK_WINDOW_FIELDS", "LINK_DOWN", "LINK_BURST", "TASKS", "STAGES"]

#: Word indices of the link's control words (``WordLayout.word``), above every message word
#: (forward 0 .. 8, backward 0 .. 5). Downstream (direction 0): START, BUS_REQUEST (data: node
#: | addr << 8 | we << 16; slot: the transaction's tag), BUS_WDATA (a write's word, same tag).
#: Upstream (direction 1): DONE (data: overflow bit per board index), BUS_REPLY / BUS_ERROR
#: (data: the word; slot: the tag), LINK_STATE (data: bit h, the link from board h to h+1 is
#: down, for the hops behind the sender). The pipelined policy (``docs/distributed.md``,
#: *Pipelined policy*) numbers the message words' and slot acknowledges' ``slot`` by bank,
#: sends one START (slot: its bank) and one DONE per sample, in sample order, and adds LOCAL
#: upstream (one per sample: the sender and every board behind it finished the sample's local
#: request, so its bank may take the next sample's inputs); a bus request's data then also
#: carries the bank (bits 17-18) and the result sample number (bits 19-22) of the access.
LINK_WORDS = {"START": 12, "BUS_REQUEST": 13, "BUS_WDATA": 14,
              "DONE": 12, "BUS_REPLY": 13, "BUS_ERROR": 14, "LINK_STATE": 15, "LOCAL": 11}

#: Node addresses of the link window (read-only, every board): ``LINK_WINDOW + 8 * port +
#: field``, port 0 the upstream link, 1 the downstream one; 0 where a board has no such link.
LINK_WINDOW = 0xE0
#: Fields of the link window, in address order (``status``: up | hears << 1 | aligned << 2 |
#: neighbour_index << 8 | neighbour_index_valid << 16 | board_index << 24).
LINK_WINDOW_FIELDS = ("status", "frames_sent", "frames_received", "crc_errors",
                      "retransmissions", "link_drops")
#: Control-block address (distributed chain only, read-only): bit h, the link from board h to
#: board h+1 is down (as board h sees it, reported along the links).
LINK_DOWN = 0x34

#: The requests of one sample on one node, in order (as the chain's).
TASKS = ("joint", "forward", "local", "backward")
#: Progress of the sample on a board: free, then waiting for / running each task.
STAGES = ("free",) + tuple(f"{prefix}{task}" for task in TASKS for prefix in ("want_", ""))

#: Most words per link frame (``NeighbourLink(burst=)``, ``docs/link.md``), per link: the
#: upstream link sends the backward message (6 words, written by ``distal`` at its end: one
#: frame), the downstream link the forward one (9 words, written as the node's inputs arrive:
#: small frames, so the next board starts early). ``link_parameters={"burst": k}`` sets both.
LINK_BURST = {"up": 6, "down": 2}

_FREE = 0
_COUNTER = 32
#: Pipelined policy: bits of the sample numbers the result shadows and the bus requests carry
#: (``2 * banks`` tickets, at most 8: a shadow taken over by a later sample is told apart).
_SAMPLE_BITS = 4
#: Control words wait for the link while its FIFO holds fewer words than this (the rest is
#: room for a whole message, which the MAC writes without a pause).
_CONTROL_ROOM = 6
#: Cycles a node's distal request must have stalled before a read waiting for it is refused
#: while a link behind the board is down (an operand interlock stalls for less: the MAC
#: pipeline's latency, 8 cycles).
_STALL_CYCLES = 32
_FIFO_DEPTH = 16


def _want(task):
    return 1 + 2 * TASKS.index(task)


def check_policy(policy, banks):
    """Return ``(policy, banks)`` of a distributed chain, ``banks`` defaulted as
    :class:`~linkdyn.gateware.chain.LinkDynChain` does (1 sequential, ``BANKS`` pipelined).

    Raises
    ------
    ValueError
        If ``policy`` is not one of :data:`~linkdyn.gateware.chain.POLICIES` or ``banks`` does
        not fit it (sequential: 1; pipelined: 2 or 4).
    """
    if policy not in POLICIES:
        raise ValueError(f"Policy must be one of {POLICIES!r}, not {policy!r}")
    pipelined = policy == "pipelined"
    if banks is None:
        banks = BANKS if pipelined else 1
    if banks not in ((2, 4) if pipelined else (1,)):
        raise ValueError(f"Bank count of the {policy} policy must be "
                         f"{'2 or 4' if pipelined else '1'}, not {banks!r}")
    return policy, banks


def _check_int(name, value, low, high):
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be {low} .. {high}, not {value!r}")


class NodeTarget(wiring.Component):
    """A node's register-bus target on its board: raw reads and writes of the node's register
    file, as the chain does them (a write waits for a cycle without a MAC write; a read holds
    the node, waits until its running request ends, then reads). No access rules: the base
    board decides them. A joint controller beside the node plugs in here (its window from
    0x80 of the same node address space).

    Parameters
    ----------
    node : LinkDynNode
        The node (a submodule of the caller's module; the caller connects the members below to
        its ``ext`` port, ``hold`` and ``busy``).

    Members
    -------
    bus : In(RegisterBusSignature())
        Target side; ``node`` is ignored; ``error`` is never set.
    ext_addr, ext_write_data, ext_write_enable, hold : Out
        To the node's ``ext`` port and ``hold``.
    ext_write_ready, ext_read_data, node_busy : In
        From the node.
    """

    def __init__(self, node):
        self._read_latency = node.ext_read_latency
        super().__init__({
            "bus": In(RegisterBusSignature()),
            "ext_addr": Out(node.addr_width),
            "ext_write_data": Out(signed(WORD_WIDTH)),
            "ext_write_enable": Out(1),
            "ext_write_ready": In(1),
            "ext_read_data": In(signed(WORD_WIDTH)),
            "node_busy": In(1),
            "hold": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        bus = self.bus
        held = Signal()
        want_hold = Signal()
        m.d.sync += held.eq(want_hold)
        m.d.comb += [self.hold.eq(held), self.ext_addr.eq(bus.addr),
                     self.ext_write_data.eq(bus.wdata)]
        with m.FSM():
            with m.State("IDLE"):
                with m.If(bus.valid):
                    m.next = "GO"
            with m.State("GO"):
                with m.If(~bus.valid):
                    m.next = "IDLE"
                with m.Elif(bus.we):
                    m.d.comb += self.ext_write_enable.eq(1)
                    with m.If(self.ext_write_ready):
                        m.d.comb += bus.ready.eq(1)
                        m.d.comb += bus.rdata.eq(bus.wdata)
                        m.next = "DONE"
                with m.Else():
                    m.d.comb += want_hold.eq(1)
                    with m.If(held & ~self.node_busy):
                        m.next = "FETCH_1"
            for k in range(1, self._read_latency + 1):
                with m.State(f"FETCH_{k}"):
                    m.d.comb += want_hold.eq(1)
                    if k < self._read_latency:
                        m.next = f"FETCH_{k + 1}"
                    else:
                        m.d.comb += [bus.ready.eq(1), bus.rdata.eq(self.ext_read_data)]
                        m.next = "DONE"
            with m.State("DONE"):
                # One cycle for the initiator to drop valid.
                m.next = "IDLE"
        return m


class _Pending:
    """A control word waiting for its link (set: a new word, superseding one not yet sent)."""

    def __init__(self, name):
        self.set = Signal(name=f"{name}_set")
        self.next = Signal(WordLayout, name=f"{name}_next")
        self.pending = Signal(name=f"{name}_pending")
        self.word = Signal(WordLayout, name=f"{name}_word")
        self.pushed = Signal(name=f"{name}_pushed")

    def elaborate(self, m):
        with m.If(self.set):
            m.d.sync += [self.pending.eq(1), self.word.eq(self.next)]
        with m.Elif(self.pushed):
            m.d.sync += self.pending.eq(0)


class ActuatorCore(wiring.Component):
    """One actuator board's core: a LinkDyn node, its inbound mailboxes, the links to its
    neighbours, the scheduler and the register-bus routing (module docstring).

    Parameters
    ----------
    fmt : QFormat
        Word format of the node (default Q15.16).
    base : bool
        The base board (index 0): no upstream link; the register-bus target of the host.
    last : bool
        The last board: no downstream link; its ``backward_in`` is the zero wrench in its
        register file (as the chain's last node).
    nodes : int, optional
        Base board only: the number of boards n of the chain (the bus's node range).
    bits : int
        Bits per cycle of the link pins (2 for DDR I/O, 100 Mbit/s at 50 MHz; 5 in fast
        simulations).
    rx_domain : str
        Clock domain of the receiving link PHYs (``"sync"``: one clock, as in simulation).
    timeout : int
        Base board: cycles after which an access to a node is answered with ``error`` (a
        board behind a broken link; a node whose running request waits for a missing word).
        An access to a board behind a hop known to be down is refused at once, and one under
        way when such a hop goes down as soon as that is known (``docs/distributed.md``).
    link_parameters : dict, optional
        ``window``, ``ack_timeout``, ``down_timeout``, ``burst`` of the links; ``burst`` an
        integer (both links) or ``{"up": k, "down": k}``, default :data:`LINK_BURST`.
    cordic_step_cycles : int
        Of the node (1 or 2).
    node_target : callable, optional
        ``node_target(node)`` (called here) returns the board's bus target in place of
        :class:`NodeTarget` (the same members, and more): a joint controller beside the node
        (:class:`~linkdyn.gateware.controlled_actuator.BoardController`). With it the base
        board passes the controller window (node addresses ``CONTROLLER_BASE`` up to the link
        window) to the board's target as it is, while an update runs too: the access rules of
        the window are the controlled front end's.
    policy : str
        Update policy, ``"sequential"`` (default: one update at a time) or ``"pipelined"``
        (the node banked, the mailboxes with a slot per bank, the chain's per-bank scheduler,
        START / DONE / LOCAL per sample, per-update result shadows; the base board answers as
        the pipelined :class:`~linkdyn.gateware.chain.LinkDynChain`; ``docs/distributed.md``,
        *Pipelined policy*). Every board of a chain needs the same policy and banks.
    banks : int, optional
        Register banks: 1 sequential; 2 or 4 pipelined (default
        :data:`~linkdyn.model.microprogram.BANKS`).

    Members
    -------
    bus : In(RegisterBusSignature())
        Base board: the register bus, target side, with the chain's semantics.
    busy : Out(1)
        Base board: an update is in flight.
    overflow_sticky : Out(nodes)
        Base board: OVERFLOW_STICKY.
    link_down : Out(nodes - 1)
        Base board: LINK_DOWN (bit h: the hop from board h to h+1 is down).
    up_tx, up_rx : Out(bits), In(bits)
        Non-base board: the upstream link's serial data.
    down_tx, down_rx : Out(bits), In(bits)
        Non-last board: the downstream link's serial data.
    board_index : Out(8)
        This board's index (0 on the base; the upstream neighbour's + 1 once its link came up).
    board_index_valid : Out(1)

    Attributes
    ----------
    node : LinkDynNode
    upstream, downstream : NeighbourLink or None

    Raises
    ------
    TypeError
        If ``fmt`` is not a QFormat or an integer parameter is not an integer.
    ValueError
        If ``nodes`` is missing on a base board or given on another, or out of range; if a
        base board of more than one board is ``last`` or a 1-board chain is not; if
        ``policy`` is unknown or ``banks`` does not fit it.
    """

    def __init__(self, fmt=None, *, base, last, nodes=None, bits=2, rx_domain="sync",
                 timeout=1 << 16, link_parameters=None, cordic_step_cycles=2, node_target=None,
                 policy="sequential", banks=None):
        if node_target is not None and not callable(node_target):
            raise TypeError(f"node_target must be a callable taking the node, not "
                            f"{node_target!r}")
        fmt = node_formats(fmt)
        self._policy, self._banks = check_policy(policy, banks)
        self._pipelined = self._policy == "pipelined"
        self._tickets = 2 * self._banks if self._pipelined else 1
        if node_target is not None and self._pipelined:
            raise ValueError("a board target beside the node (node_target, the joint "
                             "controllers) needs the sequential policy, not the pipelined one")
        if base:
            if nodes is None:
                raise ValueError("A base board needs the number of boards (nodes=)")
            _check_int("Board count", nodes, 1, MAX_NODES)
            if (nodes == 1) != bool(last):
                raise ValueError(f"A base board of {nodes} board(s) must have last="
                                 f"{nodes == 1}, not {last!r}")
            _check_int("Timeout", timeout, 64, 1 << 30)
        elif nodes is not None:
            raise ValueError(f"Only the base board takes the board count, not nodes={nodes!r}")
        self._fmt = fmt
        self._base = bool(base)
        self._last = bool(last)
        self._n = nodes
        self._timeout = timeout
        self._bits = bits
        self._node_target = node_target
        self.spec = ProtocolSpec(nodes, fmt) if base else None
        inbox = (() if base else ("forward_in",)) + (() if last else ("backward_in",))
        banked = {"banks": self._banks} if self._pipelined else {}
        self.node = LinkDynNode(fmt, split_joint=True, split_local=True, interlock=True,
                                inbox=inbox, cordic_step_cycles=cordic_step_cycles, **banked)
        #: The board's bus target given by ``node_target`` (None: the node's own NodeTarget).
        self.target = None if node_target is None else node_target(self.node)
        parameters = dict(link_parameters or {})
        burst = parameters.pop("burst", None)
        if burst is None:
            bursts = dict(LINK_BURST)
        elif isinstance(burst, dict):
            if not set(burst) <= set(LINK_BURST):
                raise ValueError(f"Burst per link takes the keys 'up' and 'down', not "
                                 f"{sorted(burst)!r}")
            bursts = {**LINK_BURST, **burst}
        else:
            bursts = dict.fromkeys(LINK_BURST, burst)
        self.upstream = None if base else NeighbourLink(bits=bits, rx_domain=rx_domain,
                                                        burst=bursts["up"], **parameters)
        self.downstream = None if last else NeighbourLink(bits=bits, rx_domain=rx_domain,
                                                          burst=bursts["down"], **parameters)
        members = {"board_index": Out(8), "board_index_valid": Out(1)}
        if base:
            members.update({
                "bus": In(RegisterBusSignature()),
                "busy": Out(1),
                "overflow_sticky": Out(nodes),
                "link_down": Out(max(nodes - 1, 1)),
            })
        if not base:
            members.update({"up_tx": Out(bits), "up_rx": In(bits)})
        if not last:
            members.update({"down_tx": Out(bits), "down_rx": In(bits)})
        super().__init__(members)

    @property
    def base(self):
        """bool: the base board."""
        return self._base

    @property
    def last(self):
        """bool: the last board."""
        return self._last

    @property
    def policy(self):
        """str: the update policy (:data:`~linkdyn.gateware.chain.POLICIES`)."""
        return self._policy

    @property
    def banks(self):
        """int: register banks of the node and slots of its mailboxes (1, 2 or 4)."""
        return self._banks

    @property
    def max_in_flight(self):
        """int: updates in flight at most (1, or ``2 * banks`` when pipelined)."""
        return self._tickets

    # ------------------------------------------------------------------------------------------

    def elaborate(self, platform):
        m = Module()
        base = self._base
        fmt = self._fmt
        rmap = microprogram(fmt).registers
        forward = message_layout("forward", fmt)
        backward = message_layout("backward", fmt)
        node = self.node
        m.submodules.node = node
        up, down = self.upstream, self.downstream
        if up is not None:
            m.submodules.upstream = up
            m.d.comb += [self.up_tx.eq(up.tx), up.rx.eq(self.up_rx)]
        if down is not None:
            m.submodules.downstream = down
            m.d.comb += [self.down_tx.eq(down.tx), down.rx.eq(self.down_rx)]

        # ---- board index ---------------------------------------------------------------------
        index = self.board_index
        if base:
            m.d.comb += [index.eq(0), self.board_index_valid.eq(1)]
        else:
            m.d.comb += [index.eq(up.status.neighbour_index + 1),
                         self.board_index_valid.eq(up.status.neighbour_index_valid)]
        for link in (up, down):
            if link is not None:
                m.d.comb += [link.board_index.eq(index),
                             link.board_index_valid.eq(self.board_index_valid)]

        # ---- inbound mailboxes (written by the links) ----------------------------------------
        pipelined, banks = self._pipelined, self._banks
        slots = (banks,) if pipelined else ()
        forward_box = backward_box = None
        if up is not None:
            m.submodules.forward_in = forward_box = Mailbox(len(forward), *slots)
        if down is not None:
            m.submodules.backward_in = backward_box = Mailbox(len(backward), *slots)
        for k, (box, is_backward) in enumerate(((forward_box, 0), (backward_box, 1))):
            if box is None:
                continue
            receiver = box.receiver
            selected = Signal(name=f"inbox_{k}")
            issued = Signal(name=f"inbox_{k}_issued")
            m.d.comb += [selected.eq(node.inbox.backward == is_backward),
                         receiver.word.eq(node.inbox.word)]
            m.d.sync += issued.eq(selected)
            # Present bits registered twice, as in the chain (a word is seen two cycles after
            # it is written; a slot is cleared only after its last read).
            travel = Signal.like(receiver.words_present, name=f"inbox_{k}_travel")
            seen = Signal.like(receiver.words_present, name=f"inbox_{k}_present")
            m.d.sync += [travel.eq(receiver.words_present), seen.eq(travel)]
            first = len(forward) * is_backward
            if pipelined:
                # The slot of the running request's bank (as the chain's).
                m.d.comb += [receiver.slot.eq(node.inbox.bank),
                             node.inbox.present_words[first:first + box.words].eq(
                                 seen[node.inbox.bank])]
            else:
                m.d.comb += node.inbox.present_words[first:first + box.words].eq(seen[0])
            with m.If(issued):
                m.d.comb += node.inbox.data.eq(receiver.data)

        # ---- outgoing words: per link a FIFO, MAC words first, control words when up ----------
        pendings = {}
        outputs = {}
        for name, link, direction in (("up", up, 1), ("down", down, 0)):
            if link is None:
                continue
            m.submodules[f"{name}_fifo"] = fifo = SyncFIFOBuffered(
                width=WordLayout.size, depth=_FIFO_DEPTH)
            m.d.comb += [link.tx_words.valid.eq(fifo.r_rdy),
                         link.tx_words.payload.eq(fifo.r_data),
                         fifo.r_en.eq(link.tx_words.ready)]
            mac_valid = Signal(name=f"{name}_mac_valid")
            mac_word = Signal(WordLayout, name=f"{name}_mac_word")
            # Upstream: the board's own bus answer (BUS_REPLY) and a reply relayed from a
            # board behind (BUS_RELAY) wait in slots of their own: neither ever supersedes
            # the other, and neither slot takes a new word before its last one is sent.
            kinds = (("BUS_REPLY", "BUS_RELAY", "LINK_STATE", "DONE") if name == "up"
                     else ("BUS_REQUEST", "BUS_WDATA", "START"))
            if pipelined and name == "up":
                kinds += ("LOCAL",)
            pend = {kind: _Pending(f"{name}_{kind.lower()}") for kind in kinds}
            pendings[name] = pend
            outputs[name] = (mac_valid, mac_word, direction)
            m.d.comb += fifo.w_en.eq(0)
            with m.If(mac_valid):
                m.d.comb += [fifo.w_en.eq(1), fifo.w_data.eq(mac_word)]
            with m.Elif(link.status.up & (fifo.level < _CONTROL_ROOM)):
                chosen = Const(0, 1)
                for kind in kinds:
                    p = pend[kind]
                    with m.If(p.pending & ~chosen):
                        m.d.comb += [fifo.w_en.eq(1), fifo.w_data.eq(p.word), p.pushed.eq(1)]
                    chosen = chosen | p.pending
            for p in pend.values():
                p.elaborate(m)

        def connect_sender(layout, target):
            # The node's MAC results that are words of `layout` go into link `target`.
            mac_valid, mac_word, direction = outputs[target]
            hit = Signal(name=f"{target}_message_hit")
            with m.Switch(node.result.addr):
                for word, (source, _) in enumerate(layout):
                    with m.Case(rmap[source].address):
                        m.d.comb += [hit.eq(1), mac_word.word.eq(word)]
            m.d.comb += [mac_valid.eq(node.result.valid & hit),
                         mac_word.direction.eq(direction),
                         mac_word.data.eq(node.result.data)]
            if pipelined:
                m.d.comb += mac_word.slot.eq(node.result.bank)

        if down is not None:
            connect_sender(forward, "down")
        if up is not None:
            connect_sender(backward, "up")

        # ---- slot acknowledges out, and the outgoing messages' "sent, not acknowledged" ------
        forward_out_pending = Signal(banks) if pipelined else Signal()
        backward_out_pending = Signal(banks) if pipelined else Signal()
        ack_out = {}
        for name, link, direction in (("up", up, 0), ("down", down, 1)):
            if link is None:
                continue
            if pipelined:
                # One pending acknowledge per slot; the lowest goes first.
                pending = Signal(banks, name=f"{name}_slot_ack_pending")
                ack_out[name] = set_ack = Signal(name=f"{name}_slot_ack_set")
                ack_slot = ack_out[f"{name}_slot"] = Signal(range(banks),
                                                            name=f"{name}_slot_ack_bank")
                sending = Signal(range(banks), name=f"{name}_slot_ack_sending")
                for b in reversed(range(banks)):
                    with m.If(pending[b]):
                        m.d.comb += sending.eq(b)
                m.d.comb += [link.tx_slot_acks.valid.eq(pending.any()),
                             link.tx_slot_acks.payload.direction.eq(direction),
                             link.tx_slot_acks.payload.slot.eq(sending)]
                for b in range(banks):
                    with m.If(set_ack & (ack_slot == b)):
                        m.d.sync += pending[b].eq(1)
                    with m.Elif(link.tx_slot_acks.ready & (sending == b)):
                        m.d.sync += pending[b].eq(0)
            else:
                pending = Signal(name=f"{name}_slot_ack_pending")
                ack_out[name] = set_ack = Signal(name=f"{name}_slot_ack_set")
                m.d.comb += [link.tx_slot_acks.valid.eq(pending),
                             link.tx_slot_acks.payload.direction.eq(direction),
                             link.tx_slot_acks.payload.slot.eq(0)]
                with m.If(set_ack):
                    m.d.sync += pending.eq(1)
                with m.Elif(link.tx_slot_acks.ready):
                    m.d.sync += pending.eq(0)
            m.d.comb += link.rx_slot_acks.ready.eq(1)

        # ---- words in ----------------------------------------------------------------------
        start_in = Signal()              # START from upstream
        request_in = Signal()            # a bus request for some board, complete
        extra = {"bank": 2, "sample": _SAMPLE_BITS} if pipelined else {}
        request = Signal(data.StructLayout({"tag": 2, "node": 8, "addr": 8, "we": 1,
                                            "wdata": 32, **extra}))
        reply_in = Signal()              # a bus reply from downstream
        reply = Signal(data.StructLayout({"tag": 2, "error": 1, "data": 32}))
        done_in = Signal()               # DONE from downstream
        done_overflow_in = Signal(32)
        local_in = Signal() if pipelined else None    # LOCAL from downstream
        behind_down = Signal(32)         # LINK_STATE from downstream
        reply_hold = Signal()            # a reply from downstream waits in its link
        if up is not None:
            words = up.rx_words
            m.d.comb += words.ready.eq(1)
            header = Signal(data.StructLayout({"tag": 2, "node": 8, "addr": 8, "we": 1,
                                               **extra}))
            waiting_data = Signal()
            payload = words.payload
            with m.If(words.valid & (payload.direction == 0)):
                with m.If(payload.word < len(forward)):
                    m.d.comb += [forward_box.sender.valid.eq(1),
                                 forward_box.sender.payload.word.eq(payload.word),
                                 forward_box.sender.payload.data.eq(payload.data)]
                    if pipelined:
                        m.d.comb += forward_box.sender.payload.slot.eq(payload.slot)
                with m.Elif(payload.word == LINK_WORDS["START"]):
                    m.d.comb += start_in.eq(1)
                with m.Elif(payload.word == LINK_WORDS["BUS_REQUEST"]):
                    m.d.sync += [header.tag.eq(payload.slot), header.node.eq(payload.data[:8]),
                                 header.addr.eq(payload.data[8:16]),
                                 header.we.eq(payload.data[16]),
                                 waiting_data.eq(payload.data[16])]
                    if pipelined:
                        m.d.sync += [header.bank.eq(payload.data[17:19]),
                                     header.sample.eq(payload.data[19:19 + _SAMPLE_BITS])]
                    with m.If(~payload.data[16]):
                        m.d.comb += [request_in.eq(1), request.tag.eq(payload.slot),
                                     request.node.eq(payload.data[:8]),
                                     request.addr.eq(payload.data[8:16]), request.we.eq(0)]
                        if pipelined:
                            m.d.comb += [request.bank.eq(payload.data[17:19]),
                                         request.sample.eq(
                                             payload.data[19:19 + _SAMPLE_BITS])]
                with m.Elif(payload.word == LINK_WORDS["BUS_WDATA"]):
                    with m.If(waiting_data & (payload.slot == header.tag)):
                        m.d.sync += waiting_data.eq(0)
                        m.d.comb += [request_in.eq(1), request.tag.eq(header.tag),
                                     request.node.eq(header.node), request.addr.eq(header.addr),
                                     request.we.eq(1), request.wdata.eq(payload.data)]
                        if pipelined:
                            m.d.comb += [request.bank.eq(header.bank),
                                         request.sample.eq(header.sample)]
            if pipelined:
                for b in range(banks):
                    with m.If(up.rx_slot_acks.valid & (up.rx_slot_acks.payload.slot == b)):
                        m.d.sync += backward_out_pending[b].eq(0)
            else:
                with m.If(up.rx_slot_acks.valid):
                    m.d.sync += backward_out_pending.eq(0)
        if down is not None:
            words = down.rx_words
            payload = words.payload
            is_reply = ((payload.direction == 1)
                        & ((payload.word == LINK_WORDS["BUS_REPLY"])
                           | (payload.word == LINK_WORDS["BUS_ERROR"])))
            # Back-pressure: a reply is taken only when the relay has room for it (the link
            # holds it, and repeats what comes behind it, meanwhile).
            m.d.comb += words.ready.eq(~(reply_hold & is_reply))
            with m.If(words.valid & (payload.direction == 1)):
                with m.If(payload.word < len(backward)):
                    m.d.comb += [backward_box.sender.valid.eq(1),
                                 backward_box.sender.payload.word.eq(payload.word),
                                 backward_box.sender.payload.data.eq(payload.data)]
                    if pipelined:
                        m.d.comb += backward_box.sender.payload.slot.eq(payload.slot)
                if pipelined:
                    with m.Elif(payload.word == LINK_WORDS["LOCAL"]):
                        m.d.comb += local_in.eq(1)
                with m.Elif(payload.word == LINK_WORDS["DONE"]):
                    m.d.comb += [done_in.eq(1), done_overflow_in.eq(payload.data)]
                with m.Elif(is_reply):
                    m.d.comb += [reply_in.eq(~reply_hold), reply.tag.eq(payload.slot),
                                 reply.error.eq(payload.word == LINK_WORDS["BUS_ERROR"]),
                                 reply.data.eq(payload.data)]
                with m.Elif(payload.word == LINK_WORDS["LINK_STATE"]):
                    m.d.sync += behind_down.eq(payload.data)
            if pipelined:
                for b in range(banks):
                    with m.If(down.rx_slot_acks.valid & (down.rx_slot_acks.payload.slot == b)):
                        m.d.sync += forward_out_pending[b].eq(0)
            else:
                with m.If(down.rx_slot_acks.valid):
                    m.d.sync += forward_out_pending.eq(0)

        # ---- the scheduler (sequential policy) ----------------------------------------------
        if pipelined:
            sched = self._elaborate_pipelined_scheduler(
                m, index, forward_box, backward_box, pendings, ack_out, forward_out_pending,
                backward_out_pending, start_in, done_in, done_overflow_in, local_in)
            start_event, hold = sched["start_event"], sched["hold"]
            finished, finished_overflow = sched["finished"], sched["finished_overflow"]
        else:
            start_event = Signal()           # this board's node starts an update
            stage = Signal(range(len(STAGES)))
            node_overflow = Signal()
            hold = Signal()
            triggers = self._message_triggers()
            arrived_forward = Const(1, 1)
            if forward_box is not None:
                arrived_forward = forward_box.receiver.words_present[0][triggers["forward"]]
            arrived_backward = Const(1, 1)
            if backward_box is not None:
                arrived_backward = backward_box.receiver.words_present[0][triggers["distal"]]
            choices = [
                ("backward", (stage == _want("backward")) & arrived_backward
                 & ~backward_out_pending),
                ("forward", (stage == _want("forward")) & arrived_forward & ~forward_out_pending),
                ("local", stage == _want("local")),
                ("joint", stage == _want("joint")),
            ]
            can_issue = node.ready & ~hold
            issue = {kind: Signal(name=f"issue_{kind}") for kind, _ in choices}
            taken = Const(0, 1)
            for kind, eligible in choices:
                m.d.comb += issue[kind].eq(can_issue & eligible & ~taken)
                taken = taken | eligible
            for kind in REQUESTS:
                m.d.comb += getattr(node, kind).start.eq(issue[kind])
            done_kind = node.request_kind
            forward_done = node.request_done & (done_kind == REQUESTS.index("forward"))
            backward_done = node.request_done & (done_kind == REQUESTS.index("backward"))
            with m.If(node.request_done):
                with m.Switch(done_kind):
                    for task, following in zip(TASKS, TASKS[1:]):
                        with m.Case(REQUESTS.index(task)):
                            m.d.sync += stage.eq(_want(following))
                    with m.Case(REQUESTS.index("backward")):
                        m.d.sync += stage.eq(_FREE)
            with m.Elif(Cat(*issue.values()).any()):
                m.d.sync += stage.eq(stage + 1)
            with m.Elif(start_event & (stage == _FREE)):
                m.d.sync += stage.eq(_want("joint"))
            with m.If(issue["joint"]):
                m.d.sync += node_overflow.eq(0)
            with m.If(node.result.valid & node.result.overflow):
                m.d.sync += node_overflow.eq(1)
            if down is not None:
                with m.If(issue["forward"]):
                    m.d.sync += forward_out_pending.eq(1)
            if up is not None:
                with m.If(issue["backward"]):
                    m.d.sync += backward_out_pending.eq(1)
            # Acknowledges: the inbound slot is read once the request that reads it ends.
            if forward_box is not None:
                m.d.comb += [forward_box.ack.valid.eq(forward_done), ack_out["up"].eq(forward_done)]
            if backward_box is not None:
                m.d.comb += [backward_box.ack.valid.eq(backward_done),
                             ack_out["down"].eq(backward_done)]
            # START passes on downstream.
            if base:
                pass  # start_event: from the control block below
            else:
                m.d.comb += start_event.eq(start_in)
            if down is not None:
                p = pendings["down"]["START"]
                m.d.comb += [p.set.eq(start_event), p.next.direction.eq(0),
                             p.next.word.eq(LINK_WORDS["START"])]
            # DONE: this board and every board behind it finished distal.
            own_done = Signal()
            behind_done = Signal()
            behind_overflow = Signal(32)
            finished = Signal()              # the update finished here and behind
            finished_overflow = Signal(32)
            with m.If(backward_done):
                m.d.sync += own_done.eq(1)
            if down is not None:
                with m.If(done_in):
                    m.d.sync += [behind_done.eq(1), behind_overflow.eq(done_overflow_in)]
                ready_behind = behind_done
            else:
                ready_behind = Const(1, 1)
            own_bit = (node_overflow.as_unsigned() << index)[:32]
            m.d.comb += [finished.eq(own_done & ready_behind),
                         finished_overflow.eq(behind_overflow | own_bit)]
            with m.If(finished):
                m.d.sync += [own_done.eq(0), behind_done.eq(0), behind_overflow.eq(0)]
            if up is not None:
                p = pendings["up"]["DONE"]
                m.d.comb += [p.set.eq(finished), p.next.direction.eq(1),
                             p.next.word.eq(LINK_WORDS["DONE"]), p.next.data.eq(finished_overflow)]

        # ---- link state behind this board ----------------------------------------------------
        down_mask = Signal(32)
        if down is not None:
            own_down = (~down.status.up).as_unsigned()
            m.d.comb += down_mask.eq(behind_down | (own_down << index)[:32])
        if up is not None:
            reported = Signal(32)
            p = pendings["up"]["LINK_STATE"]
            changed = down_mask != reported
            m.d.comb += [p.set.eq(changed & self.board_index_valid), p.next.direction.eq(1),
                         p.next.word.eq(LINK_WORDS["LINK_STATE"]), p.next.data.eq(down_mask)]
            with m.If(p.set):
                m.d.sync += reported.eq(down_mask)

        # ---- the node's register-bus target and the link window -------------------------------
        m.submodules.target = target = NodeTarget(node) if self.target is None else self.target
        m.d.comb += [
            node.ext.addr.eq(target.ext_addr),
            node.ext.write_data.eq(target.ext_write_data),
            node.ext.write_enable.eq(target.ext_write_enable),
            target.ext_write_ready.eq(node.ext.write_ready),
            target.ext_read_data.eq(node.ext.read_data),
            target.node_busy.eq(node.busy),
            hold.eq(target.hold),
            node.hold.eq(target.hold),
        ]
        window_words = {}
        for port, link in enumerate((up, down)):
            for k, field in enumerate(LINK_WINDOW_FIELDS):
                address = LINK_WINDOW + 8 * port + k
                if link is None:
                    window_words[address] = Const(0, 32)
                elif field == "status":
                    s = link.status
                    window_words[address] = Cat(s.up, s.hears, s.aligned, Const(0, 5),
                                                s.neighbour_index, s.neighbour_index_valid,
                                                Const(0, 7), index)
                else:
                    window_words[address] = getattr(link.counters, field)

        # A transaction for this board: the local executor (node or link window).
        local = Signal()                 # run `job` here
        job = Signal(data.StructLayout({"addr": 8, "we": 1, "wdata": 32, **extra}))
        local_answer = Signal()
        local_error = Signal()
        local_data = Signal(32)
        in_window = (job.addr >= LINK_WINDOW) & (job.addr < LINK_WINDOW + 16)
        window_data = Signal(32)
        with m.Switch(job.addr):
            for address, word in window_words.items():
                with m.Case(address):
                    m.d.comb += window_data.eq(word)
        running = Signal()
        with m.If(local):
            m.d.sync += running.eq(1)
        m.d.comb += [target.bus.addr.eq(job.addr), target.bus.we.eq(job.we),
                     target.bus.wdata.eq(job.wdata)]
        if pipelined:
            # The node's banked registers: writes to the staging bank, reads from the bank of
            # the update the result reads show; results from their per-update shadows.
            m.d.comb += node.ext.bank.eq(job.bank[:ceil_log2(banks)])
            shadows = self._elaborate_shadows(m, sched["head_sample"], job.sample)
            in_shadow = Signal()
            shadow_data = Signal(32)
            shadow_match = Signal()
            with m.Switch(job.addr):
                for address, (word, match) in shadows.items():
                    with m.Case(address):
                        m.d.comb += [in_shadow.eq(~job.we), shadow_data.eq(word),
                                     shadow_match.eq(match)]
        # A read of the node's registers waits until the node ends its running request. A
        # distal request that stalls on a missing word of the backward message while a link
        # behind this board is down waits for a word from behind the cut: the read is refused
        # then (an error, as an access to a board behind the cut), not after the base's
        # timeout, and given up (the node is no longer held; the board's target goes idle).
        # A stall of a few cycles (an operand interlock) is not such a wait.
        stalled = Signal(range(_STALL_CYCLES + 1), name="distal_stalled")
        with m.If(node.stall & (node.segment == SEGMENTS.index("distal"))):
            with m.If(stalled != _STALL_CYCLES):
                m.d.sync += stalled.eq(stalled + 1)
        with m.Else():
            m.d.sync += stalled.eq(0)
        node_read = ~job.we
        if self._node_target is not None:
            node_read = node_read & (job.addr < CONTROLLER_BASE)
        behind_cut = Signal(name="read_behind_cut")
        m.d.comb += behind_cut.eq(node_read & node.stall & (stalled == _STALL_CYCLES)
                                  & (down_mask != 0))
        with m.If(running):
            with m.If(in_window):
                m.d.comb += [local_answer.eq(1), local_error.eq(job.we),
                             local_data.eq(window_data)]
                m.d.sync += running.eq(0)
            if pipelined:
                with m.Elif(in_shadow):
                    # A shadow a later sample has taken over: refused, never its word.
                    m.d.comb += [local_answer.eq(1), local_data.eq(shadow_data),
                                 local_error.eq(~shadow_match)]
                    m.d.sync += running.eq(0)
            with m.Elif(behind_cut):
                m.d.comb += [local_answer.eq(1), local_error.eq(1)]
                m.d.sync += running.eq(0)
            with m.Else():
                m.d.comb += target.bus.valid.eq(1)
                with m.If(target.bus.ready):
                    m.d.comb += [local_answer.eq(1), local_data.eq(target.bus.rdata)]
                    m.d.sync += running.eq(0)

        if base and pipelined:
            self._elaborate_base_pipelined(m, local, job, local_answer, local_error,
                                           local_data, running, sched, pendings.get("down"),
                                           reply_in, reply, down, down_mask)
        elif base:
            self._elaborate_base(m, local, job, local_answer, local_error, local_data,
                                 running, start_event, finished, finished_overflow,
                                 pendings.get("down"), reply_in, reply, down, down_mask)
        else:
            # Relay and execute requests: one for this board runs here; others go on
            # downstream. One that comes while the last one still runs waits for its end (the
            # one running is then a request the base gave up while a link on the way was down,
            # delivered after the restore: the base sends a new one only after it answered or
            # gave up the last); a newer one takes its place.
            # Replies go upstream losslessly: this board's own answer waits in its slot
            # (BUS_REPLY) and the next request for this board runs only once it has been
            # sent; a reply from a board behind waits in the relay slot (BUS_RELAY), and
            # while that is taken the next one waits in the downstream link (back-pressure).
            # (One shared slot lost a reply when both came in one cycle, or when a second
            # came before the first was sent: the base then waited its whole timeout.)
            tag = Signal(2)
            mine = request.node == index
            queued = Signal()
            queued_request = Signal(request.shape(), name="queued_request")
            own_reply, relayed = pendings["up"]["BUS_REPLY"], pendings["up"]["BUS_RELAY"]
            free = Signal(name="local_free")
            m.d.comb += [free.eq(~running & ~own_reply.pending),
                         reply_hold.eq(relayed.pending)]

            def run(source):
                m.d.comb += local.eq(1)
                m.d.sync += [job.addr.eq(source.addr), job.we.eq(source.we),
                             job.wdata.eq(source.wdata), tag.eq(source.tag), queued.eq(0)]
                if pipelined:
                    m.d.sync += [job.bank.eq(source.bank), job.sample.eq(source.sample)]

            with m.If(request_in & mine & free):
                run(request)
            with m.Elif(queued & free):
                run(queued_request)
            with m.If(request_in & mine & ~free):
                m.d.sync += [queued.eq(1), queued_request.eq(request)]
            m.d.comb += [own_reply.set.eq(local_answer), own_reply.next.direction.eq(1),
                         own_reply.next.slot.eq(tag),
                         own_reply.next.word.eq(Mux(local_error, LINK_WORDS["BUS_ERROR"],
                                                    LINK_WORDS["BUS_REPLY"])),
                         own_reply.next.data.eq(local_data)]
            m.d.comb += [relayed.set.eq(reply_in), relayed.next.direction.eq(1),
                         relayed.next.slot.eq(reply.tag),
                         relayed.next.word.eq(Mux(reply.error, LINK_WORDS["BUS_ERROR"],
                                                  LINK_WORDS["BUS_REPLY"])),
                         relayed.next.data.eq(reply.data)]
            if down is not None:
                self._send_request(m, pendings["down"], request_in & ~mine, request.tag,
                                   request.node, request.addr, request.we, request.wdata,
                                   *((request.bank, request.sample) if pipelined else ()))
        return m

    def _stale_tags(self, m, tag, abandon, target, reply_in, reply, down_mask):
        """The tags of the bus requests the base gave up (``abandon``: the one with ``tag`` to
        board ``target``, refused because a link on the way went down, or timed out): such a
        request may still reach its board after the restore and its reply come back late. Its
        tag is not used again until that reply has come (and is dropped), so a late reply is
        never taken for another access's answer (replies from different boards can overtake
        each other on the way). A tag given up is free again ``timeout`` cycles after every
        link on the way to its board is up again without its reply (the request was lost).

        Returns ``(next_tag, free)``: the tag of the next request, whether there is one."""
        n = self._n
        poisoned = Signal(4, name="stale_tags")
        targets = [Signal(8, name=f"stale_target_{t}") for t in range(4)]
        age = Signal(range(self._timeout + 1), name="stale_age")

        def path_down(board):
            if n == 1:
                return Const(0, 1)
            return Cat(*(down_mask[h] & (board > h) for h in range(n - 1))).any()

        held = Cat(*(poisoned[t] & path_down(targets[t]) for t in range(4))).any()
        added = Mux(abandon, (Const(1, 4) << tag)[:4], 0)
        late = Mux(reply_in, (Const(1, 4) << reply.tag)[:4], 0)
        with m.If(abandon):
            with m.Switch(tag):
                for t in range(4):
                    with m.Case(t):
                        m.d.sync += targets[t].eq(target)
        with m.If(age == self._timeout):
            m.d.sync += poisoned.eq(added)
        with m.Else():
            m.d.sync += poisoned.eq((poisoned & ~late) | added)
        with m.If(abandon | held | (poisoned == 0)):
            m.d.sync += age.eq(0)
        with m.Else():
            m.d.sync += age.eq(age + 1)
        next_tag = Signal(2, name="next_tag")
        free = Signal(name="tag_free")
        for k in (3, 2, 1):               # the nearest free one after the last
            candidate = (tag + k)[:2]
            with m.If(~poisoned.bit_select(candidate, 1)):
                m.d.comb += [next_tag.eq(candidate), free.eq(1)]
        return next_tag, free

    @staticmethod
    def _send_request(m, pend, go, tag, node, addr, we, wdata, *extra):
        # extra (pipelined): the access's bank (2 bits) and result sample (4 bits).
        header, wdata_word = pend["BUS_REQUEST"], pend["BUS_WDATA"]
        fields = (node[:8], addr[:8], we)
        if extra:
            bank = Signal(2, name="request_bank")
            sample = Signal(_SAMPLE_BITS, name="request_sample")
            m.d.comb += [bank.eq(extra[0]), sample.eq(extra[1])]
            fields += (bank, sample)
        m.d.comb += [
            header.set.eq(go), header.next.direction.eq(0), header.next.slot.eq(tag),
            header.next.word.eq(LINK_WORDS["BUS_REQUEST"]),
            header.next.data.eq(Cat(*fields)),
            wdata_word.set.eq(go & we), wdata_word.next.direction.eq(0),
            wdata_word.next.slot.eq(tag), wdata_word.next.word.eq(LINK_WORDS["BUS_WDATA"]),
            wdata_word.next.data.eq(wdata),
        ]

    def _elaborate_pipelined_scheduler(self, m, index, forward_box, backward_box, pendings,
                                       ack_out, forward_out_pending, backward_out_pending,
                                       start_in, done_in, done_overflow_in, local_in):
        """The pipelined policy's scheduler of this board's node, as the chain's per node
        (:class:`~linkdyn.gateware.chain.LinkDynChain`, ``_elaborate_progress``): per bank the
        stage of its sample; backward for the head sample only, forward once its first mailbox
        word arrived and the outgoing slot of its bank is acknowledged, local, joint (after the
        previous sample's local). START per sample from upstream (or the base's control block),
        passed on downstream in order; DONE and LOCAL per sample, in sample order, once this
        board and every board behind it finished the sample's distal (local) request.

        Returns
        -------
        dict
            ``start_event``, ``start_bank`` (the base drives both), ``hold``, ``finished``,
            ``finished_overflow`` (the oldest sample in flight finished here and behind, with
            its overflow bit per board), ``local_all`` (one more sample finished its local
            request here and behind), ``head_sample`` (the sample this board's node finishes
            next, modulo ``2 ** _SAMPLE_BITS``).
        """
        banks, tickets = self._banks, self._tickets
        node = self.node
        up, down = self.upstream, self.downstream
        bank_bits = ceil_log2(banks)
        start_event = Signal(name="start_event")
        start_bank = Signal(range(banks), name="start_bank")
        hold = Signal(name="hold")
        stage = [Signal(range(len(STAGES)), name=f"stage_{b}") for b in range(banks)]
        queued = [Signal(name=f"queued_{b}") for b in range(banks)]
        node_overflow = [Signal(name=f"node_overflow_{b}") for b in range(banks)]
        head_sample = Signal(_SAMPLE_BITS, name="head_sample")
        head = head_sample[:bank_bits]
        triggers = self._message_triggers()

        choices = []
        for b in range(banks):
            arrived = Const(1, 1)
            if backward_box is not None:
                arrived = backward_box.receiver.words_present[b][triggers["distal"]]
            out_free = ~backward_out_pending[b] if up is not None else Const(1, 1)
            choices.append(("backward", b, (stage[b] == _want("backward")) & (head == b)
                            & arrived & out_free))
        for b in range(banks):
            arrived = Const(1, 1)
            if forward_box is not None:
                arrived = forward_box.receiver.words_present[b][triggers["forward"]]
            out_free = ~forward_out_pending[b] if down is not None else Const(1, 1)
            choices.append(("forward", b, (stage[b] == _want("forward")) & arrived & out_free))
        for b in range(banks):
            choices.append(("local", b, stage[b] == _want("local")))
        for b in range(banks):
            # joint(k+1) only after local(k) (the CORDIC latch is read in local).
            previous = stage[(b - 1) % banks]
            after = (head == b) | (previous >= _want("backward"))
            choices.append(("joint", b, (stage[b] == _want("joint")) & after))
        can_issue = node.ready & ~hold
        issue = {(kind, b): Signal(name=f"issue_{kind}_{b}") for kind, b, _ in choices}
        taken = Const(0, 1)
        for kind, b, eligible in choices:
            m.d.comb += issue[(kind, b)].eq(can_issue & eligible & ~taken)
            taken = taken | eligible
        for kind in REQUESTS:
            request = getattr(node, kind)
            m.d.comb += request.start.eq(Cat(*(issue[(kind, b)] for b in range(banks))).any())
            for b in range(1, banks):
                with m.If(issue[(kind, b)]):
                    m.d.comb += request.bank.eq(b)

        done_kind = node.request_kind
        done_bank = node.request_bank
        forward_done = node.request_done & (done_kind == REQUESTS.index("forward"))
        local_done = node.request_done & (done_kind == REQUESTS.index("local"))
        backward_done = node.request_done & (done_kind == REQUESTS.index("backward"))
        for b in range(banks):
            s, q = stage[b], queued[b]
            done_here = node.request_done & (done_bank == b)
            start_here = start_event & (start_bank == b)
            issued_here = Cat(*(issue[(kind, b)] for kind in REQUESTS)).any()
            with m.If(done_here):
                with m.Switch(done_kind):
                    for task, following in zip(TASKS, TASKS[1:]):
                        with m.Case(REQUESTS.index(task)):
                            m.d.sync += s.eq(_want(following))
                    with m.Case(REQUESTS.index("backward")):
                        m.d.sync += [s.eq(Mux(q | start_here, _want("joint"), _FREE)),
                                     q.eq(0)]
            with m.Elif(issued_here):
                m.d.sync += s.eq(s + 1)
            with m.Elif(start_here & (s == _FREE)):
                m.d.sync += s.eq(_want("joint"))
            with m.If(start_here & (s != _FREE) & ~(done_here & backward_done)):
                m.d.sync += q.eq(1)
            with m.If(issue[("joint", b)]):
                m.d.sync += node_overflow[b].eq(0)
            with m.If(node.result.valid & node.result.overflow & (node.result.bank == b)):
                m.d.sync += node_overflow[b].eq(1)
            if down is not None:
                with m.If(issue[("forward", b)]):
                    m.d.sync += forward_out_pending[b].eq(1)
            if up is not None:
                with m.If(issue[("backward", b)]):
                    m.d.sync += backward_out_pending[b].eq(1)
        # Acknowledges: the inbound slot is read once the request that reads it ends.
        if forward_box is not None:
            m.d.comb += [forward_box.ack.valid.eq(forward_done),
                         forward_box.ack.slot.eq(done_bank),
                         ack_out["up"].eq(forward_done), ack_out["up_slot"].eq(done_bank)]
        if backward_box is not None:
            m.d.comb += [backward_box.ack.valid.eq(backward_done),
                         backward_box.ack.slot.eq(done_bank),
                         ack_out["down"].eq(backward_done), ack_out["down_slot"].eq(done_bank)]
        with m.If(backward_done):
            m.d.sync += head_sample.eq(head_sample + 1)
        bank_overflow = Signal(name="bank_overflow")
        for b in range(banks):
            with m.If(done_bank == b):
                m.d.comb += bank_overflow.eq(node_overflow[b])

        # START: from upstream (its slot: the sample's bank), passed on downstream in order.
        if not self._base:
            m.d.comb += [start_event.eq(start_in),
                         start_bank.eq(up.rx_words.payload.slot[:bank_bits])]
        if down is not None:
            p = pendings["down"]["START"]
            owed = Signal(range(tickets + 1), name="start_owed")
            send_bank = Signal(range(banks), name="start_send_bank")
            go = Signal(name="start_send")
            m.d.comb += [go.eq((owed != 0) & ~p.pending), p.set.eq(go),
                         p.next.direction.eq(0), p.next.word.eq(LINK_WORDS["START"]),
                         p.next.slot.eq(send_bank)]
            m.d.sync += owed.eq(owed + start_event - go)
            with m.If(go):
                m.d.sync += send_bank.eq(send_bank + 1)

        # DONE and LOCAL: per sample, in sample order (both complete in order on every node),
        # once this board and every board behind it have (flags per ticket until sent).
        def aggregate(name, own_event, behind_event, own_data=None, behind_data=None):
            own = Signal(tickets, name=f"{name}_own")
            behind = Signal(tickets, name=f"{name}_behind")
            own_ptr = Signal(range(tickets), name=f"{name}_own_ptr")
            behind_ptr = Signal(range(tickets), name=f"{name}_behind_ptr")
            sent = Signal(range(tickets), name=f"{name}_sent")
            with m.If(own_event):
                m.d.sync += own_ptr.eq(own_ptr + 1)
            if behind_event is not None:
                with m.If(behind_event):
                    m.d.sync += behind_ptr.eq(behind_ptr + 1)
            own_data_regs = [Signal(name=f"{name}_own_data_{t}") for t in range(tickets)]
            behind_data_regs = [Signal(32, name=f"{name}_behind_data_{t}")
                                for t in range(tickets)]
            for t in range(tickets):
                with m.If(own_event & (own_ptr == t)):
                    m.d.sync += own[t].eq(1)
                    if own_data is not None:
                        m.d.sync += own_data_regs[t].eq(own_data)
                if behind_event is not None:
                    with m.If(behind_event & (behind_ptr == t)):
                        m.d.sync += behind[t].eq(1)
                        if behind_data is not None:
                            m.d.sync += behind_data_regs[t].eq(behind_data)
            ready = Signal(name=f"{name}_ready")
            data_out = Signal(32, name=f"{name}_data")
            with m.Switch(sent):
                for t in range(tickets):
                    with m.Case(t):
                        m.d.comb += ready.eq(own[t] & (behind[t] if behind_event is not None
                                                       else 1))
                        if own_data is not None:
                            word = (own_data_regs[t].as_unsigned() << index)[:32]
                            if behind_event is not None:
                                word = word | behind_data_regs[t]
                            m.d.comb += data_out.eq(word)
            go = Signal(name=f"{name}_go")
            if up is not None:
                p = pendings["up"][name.upper()]
                m.d.comb += [go.eq(ready & ~p.pending), p.set.eq(go),
                             p.next.direction.eq(1), p.next.word.eq(LINK_WORDS[name.upper()]),
                             p.next.data.eq(data_out)]
            else:
                m.d.comb += go.eq(ready)
            with m.If(go):
                m.d.sync += sent.eq(sent + 1)
                for t in range(tickets):
                    with m.If(sent == t):
                        # A flag set in this cycle belongs to a later sample (another ticket).
                        m.d.sync += [own[t].eq(0), behind[t].eq(0)]
            return go, data_out

        finished, finished_overflow = aggregate(
            "done", backward_done, done_in if down is not None else None,
            bank_overflow, done_overflow_in)
        local_all, _ = aggregate("local", local_done, local_in if down is not None else None)
        return {"start_event": start_event, "start_bank": start_bank, "hold": hold,
                "finished": finished, "finished_overflow": finished_overflow,
                "local_all": local_all, "head_sample": head_sample}

    def _elaborate_shadows(self, m, head_sample, sample):
        """The pipelined policy's result shadows on this board, per update ticket (as the
        chain's): the node's ``tau``, on the base also node 0's ``f_out``, ``mu_out`` (the base
        wrench), written when the node produces them, each with its sample number (modulo
        ``2 ** _SAMPLE_BITS``); read for ``sample`` (combinational). A read travels to its
        board while later samples run: the number tells whether sample ``sample +
        2 * banks`` has taken the shadow over since (then the read is refused, never answered
        with a later update's word).

        Returns
        -------
        dict of int to (Value, Value)
            Register address: the word of update ``sample``'s ticket, and whether it is that
            sample's.
        """
        rmap = microprogram(self._fmt).registers
        node = self.node
        names = ["tau"] + ([source for source, _ in message_layout("backward", self._fmt)]
                           if self._base else [])
        shadows = {}
        for name in names:
            address = rmap[name].address
            # Before any update: ticket t holds sample t - 2 * banks (its word 0, as the
            # chain's empty shadows).
            tickets = self._tickets
            memory = Memory(shape=WORD_WIDTH + _SAMPLE_BITS, depth=tickets,
                            init=[((t - tickets) % (1 << _SAMPLE_BITS)) << WORD_WIDTH
                                  for t in range(tickets)])
            m.submodules[f"result_{name}"] = memory
            write = memory.write_port()
            read = memory.read_port(domain="comb")
            ticket_bits = ceil_log2(tickets)
            m.d.comb += [write.en.eq(node.result.valid & (node.result.addr == address)),
                         write.data.eq(Cat(node.result.data, head_sample)),
                         write.addr.eq(head_sample[:ticket_bits]),
                         read.addr.eq(sample[:ticket_bits])]
            shadows[address] = (read.data[:WORD_WIDTH],
                                read.data[WORD_WIDTH:] == sample)
        return shadows

    def _message_triggers(self):
        """Return the mailbox word whose arrival issues the forward / distal request: the
        first word of the message the segment reads (as the chain's)."""
        rmap = microprogram(self._fmt).registers
        node = self.node
        triggers = {}
        for segment, direction, present in (("forward", "forward", not self._base),
                                             ("distal", "backward", not self._last)):
            if not present:
                continue
            receivers = [rmap[target].address for _, target in message_layout(direction,
                                                                              self._fmt)]
            start = node.segment_start[segment]
            for row in node.rom[start:node.segment_start["end"]]:
                if (row["op"] == SLOT_OPS.index("term") and row.get("b_inbox")
                        and row["b"] in receivers):
                    triggers[segment] = receivers.index(row["b"])
                    break
            else:
                raise AssertionError(f"the {segment} segment reads no mailbox word")
        return triggers

    def _elaborate_base(self, m, local, job, local_answer, local_error, local_data, running,
                        start_event, finished, finished_overflow, pend, reply_in, reply, down,
                        down_mask):
        """The base board's register-bus target: the chain's control block and access rules,
        node 0 here, the other nodes over the downstream link."""
        n = self._n
        spec = self.spec
        rmap = microprogram(self._fmt).registers
        forward = message_layout("forward", self._fmt)
        backward = message_layout("backward", self._fmt)
        bus = self.bus

        # -- updates (one in flight) --
        now = Signal(_COUNTER)
        m.d.sync += now.eq(now + 1)
        busy = Signal()
        ever_started = Signal()
        start_stamp = Signal(_COUNTER)
        last_start = Signal(_COUNTER)
        started_count = Signal(_COUNTER)
        latency = Signal(_COUNTER)
        interval = Signal(_COUNTER)
        update_count = Signal(_COUNTER)
        overflow = Signal(n)
        overflow_sticky = Signal(n)
        clear_event = Signal()
        finish_event = Signal()
        m.d.comb += finish_event.eq(busy & finished)
        with m.If(start_event):
            m.d.sync += [busy.eq(1), started_count.eq(started_count + 1),
                         interval.eq(now - last_start), last_start.eq(now),
                         start_stamp.eq(now), ever_started.eq(1)]
        with m.If(finish_event):
            m.d.sync += [busy.eq(0), latency.eq(now - start_stamp),
                         update_count.eq(update_count + 1), overflow.eq(finished_overflow[:n])]
        with m.If(clear_event):
            m.d.sync += overflow_sticky.eq(Mux(finish_event, finished_overflow[:n], 0))
        with m.Elif(finish_event):
            m.d.sync += overflow_sticky.eq(overflow_sticky | finished_overflow[:n])
        m.d.comb += [self.busy.eq(busy), self.overflow_sticky.eq(overflow_sticky)]
        if n > 1:
            m.d.comb += self.link_down.eq(down_mask[:n - 1])

        select_follow = Signal(init=1)
        select_number = Signal(_COUNTER)
        status = Cat(busy, ever_started & ~busy, overflow_sticky.any())
        control_words = {
            "STATUS": status, "OVERFLOW": overflow, "OVERFLOW_STICKY": overflow_sticky,
            "LATENCY_CYCLES": latency, "INTERVAL_CYCLES": interval,
            "UPDATE_COUNT": update_count,
        }

        # -- the access, registered and decoded as the chain's --
        req = Signal(data.StructLayout({"node": 8, "addr": 8, "we": 1, "wdata": 32}))
        read_target = Signal(8)
        read_addr = Signal(8)
        m.d.comb += [read_target.eq(req.node), read_addr.eq(req.addr)]
        with m.Switch(req.addr):
            for source, receiver in forward:
                with m.Case(rmap[receiver].address):
                    with m.If(req.node != 0):
                        m.d.comb += [read_target.eq(req.node - 1),
                                     read_addr.eq(rmap[source].address)]
            for source, receiver in backward:
                with m.Case(rmap[receiver].address):
                    with m.If(req.node != n - 1):
                        m.d.comb += [read_target.eq(req.node + 1),
                                     read_addr.eq(rmap[source].address)]
        is_window = (req.addr >= LINK_WINDOW) & (req.addr < LINK_WINDOW + 16)
        controlled = self._node_target is not None
        # With a controller beside every node: its window goes to the board's target as it is.
        is_controller = ((req.addr >= CONTROLLER_BASE) & (req.addr < LINK_WINDOW) if controlled
                         else Const(0, 1))
        fields = {
            "control": 1, "bad_target": 1, "writable": 1, "select": 1, "select_valid": 1,
            "control_address": 1, "link_down": 1, "target": 8, "addr": 8}
        if controlled:
            fields["controller"] = 1
        decoded = Signal(data.StructLayout(fields))
        select_value = req.wdata[:_COUNTER - 1]
        if controlled:
            bad_address = (req.addr >= spec.node_map_size) & ~is_window & ~is_controller
            writable = is_controller | (~is_window & (req.addr < Mux(
                req.node == 0, spec.writable_end_node0, spec.writable_end)))
            as_given = req.we | is_window | is_controller
            m.d.sync += decoded.controller.eq(is_controller)
        else:
            bad_address = (req.addr >= spec.node_map_size) & ~is_window
            writable = ~is_window & (req.addr < Mux(req.node == 0,
                                                     spec.writable_end_node0,
                                                     spec.writable_end))
            as_given = req.we | is_window
        m.d.sync += [
            decoded.control.eq(req.node == CONTROL_NODE),
            decoded.bad_target.eq((req.node >= n) | bad_address),
            decoded.writable.eq(writable),
            decoded.select.eq(req.addr == RESULT_SELECT),
            decoded.select_valid.eq((select_value != 0) & (select_value == update_count)
                                    & ~busy),
            decoded.control_address.eq(req.addr == control_register("CONTROL").address),
            decoded.link_down.eq(req.addr == LINK_DOWN),
            decoded.target.eq(Mux(as_given, req.node, read_target)),
            decoded.addr.eq(Mux(as_given, req.addr, read_addr)),
        ]
        answer = Signal()
        answer_rdata = Signal(32)
        answer_error = Signal()
        m.d.sync += [bus.ready.eq(answer), bus.rdata.eq(answer_rdata),
                     bus.error.eq(answer_error)]
        tag = Signal(2)
        wait = Signal(range(self._timeout + 1))
        path_down = Signal()
        abandon = Signal()
        next_tag, tag_free = self._stale_tags(m, tag, abandon, decoded.target, reply_in, reply,
                                              down_mask)
        # A hop on the way to the target is known to be down: refuse at once.
        if n > 1:
            m.d.comb += path_down.eq(Cat(*(down_mask[h] & (decoded.target > h)
                                           for h in range(n - 1))).any())
        with m.FSM(name="bus_fsm"):
            with m.State("IDLE"):
                with m.If(bus.valid):
                    m.d.sync += [req.node.eq(bus.node), req.addr.eq(bus.addr),
                                 req.we.eq(bus.we), req.wdata.eq(bus.wdata)]
                    m.next = "DECODE"
            with m.State("DECODE"):
                m.next = "ACCESS"
            with m.State("ACCESS"):
                with m.If(decoded.control):
                    m.d.comb += answer.eq(1)
                    m.next = "ANSWER"
                    with m.If(req.we):
                        start = (req.wdata & CONTROL_START).any()
                        clear = (req.wdata & CONTROL_CLEAR).any()
                        with m.If(decoded.select):
                            with m.If(req.wdata[_COUNTER - 1]):
                                m.d.comb += answer_rdata.eq(req.wdata)
                                m.d.sync += select_follow.eq(1)
                            with m.Elif(decoded.select_valid):
                                m.d.comb += answer_rdata.eq(req.wdata)
                                m.d.sync += [select_follow.eq(0),
                                             select_number.eq(select_value)]
                            with m.Else():
                                m.d.comb += answer_error.eq(1)
                        with m.Elif(~decoded.control_address):
                            m.d.comb += answer_error.eq(1)
                        with m.Elif(start & busy):
                            m.d.comb += answer_error.eq(1)
                        with m.Else():
                            m.d.comb += [answer_rdata.eq(req.wdata), start_event.eq(start),
                                         clear_event.eq(clear)]
                    with m.Else():
                        with m.Switch(req.addr):
                            with m.Case(control_register("CONTROL").address):
                                m.d.comb += answer_rdata.eq(0)
                            with m.Case(RESULT_SELECT):
                                m.d.comb += answer_rdata.eq(Mux(select_follow, RESULT_FOLLOW,
                                                                select_number))
                            for name, value in control_words.items():
                                with m.Case(control_register(name).address):
                                    m.d.comb += answer_rdata.eq(value)
                            with m.Case(LINK_DOWN):
                                m.d.comb += answer_rdata.eq(down_mask[:max(n - 1, 1)]
                                                            if n > 1 else 0)
                            with m.Default():
                                m.d.comb += answer_error.eq(1)
                with m.Elif(decoded.bad_target):
                    m.d.comb += [answer.eq(1), answer_error.eq(1)]
                    m.next = "ANSWER"
                with m.Elif(req.we & (~decoded.writable
                                      | (busy & ~decoded.controller if controlled else busy))):
                    m.d.comb += [answer.eq(1), answer_error.eq(1)]
                    m.next = "ANSWER"
                with m.Elif(decoded.target == 0):
                    m.d.comb += local.eq(1)
                    m.d.sync += [job.addr.eq(decoded.addr), job.we.eq(req.we),
                                 job.wdata.eq(req.wdata), wait.eq(0)]
                    m.next = "LOCAL"
                with m.Elif(path_down | ~tag_free | (pend is None)):
                    m.d.comb += [answer.eq(1), answer_error.eq(1)]
                    m.next = "ANSWER"
                with m.Else():
                    m.d.sync += [tag.eq(next_tag), wait.eq(0)]
                    if pend is not None:
                        self._send_request(m, pend, 1, next_tag, decoded.target, decoded.addr,
                                           req.we, req.wdata)
                    m.next = "REMOTE"
            with m.State("LOCAL"):
                m.d.sync += wait.eq(wait + 1)
                with m.If(local_answer):
                    m.d.comb += [answer.eq(1), answer_rdata.eq(local_data),
                                 answer_error.eq(local_error)]
                    m.next = "ANSWER"
                with m.Elif(wait == self._timeout):
                    # The node's running request waits for a word that does not come.
                    m.d.comb += [answer.eq(1), answer_error.eq(1)]
                    m.next = "ABANDON"
            with m.State("ABANDON"):
                # The local read stays pending (the node is held until it is idle) and its
                # late answer is dropped; meanwhile every access is refused at once.
                with m.If(~running):
                    m.next = "IDLE"
                with m.Elif(bus.valid):
                    m.d.comb += [answer.eq(1), answer_error.eq(1)]
                    m.next = "ABANDON_ANSWER"
            with m.State("ABANDON_ANSWER"):
                m.next = "ABANDON"
            with m.State("REMOTE"):
                m.d.sync += wait.eq(wait + 1)
                with m.If(reply_in & (reply.tag == tag)):
                    m.d.comb += [answer.eq(1), answer_rdata.eq(reply.data),
                                 answer_error.eq(reply.error)]
                    m.next = "ANSWER"
                with m.Elif(path_down | (wait == self._timeout)):
                    # A hop on the way went down while the access was under way (or no answer
                    # came): refused as soon as that is known, not after the whole timeout, so
                    # the bus is free for the boards in front of the cut; its tag is kept
                    # from reuse until its late reply (_stale_tags).
                    m.d.comb += [answer.eq(1), answer_error.eq(1), abandon.eq(1)]
                    m.next = "ANSWER"
            with m.State("ANSWER"):
                m.next = "IDLE"

    def _elaborate_base_pipelined(self, m, local, job, local_answer, local_error, local_data,
                                  running, sched, pend, reply_in, reply, down, down_mask):
        """The base board's register-bus target under the pipelined policy: the pipelined
        chain's control block and access rules (``docs/chain.md``; up to ``2 * banks`` updates
        in flight, CONTROL.start and the next sample's input writes taken once every board
        finished the local request of the sample that used its bank before, RESULT_SELECT of
        any of the last ``2 * banks`` updates), node 0 here, the other nodes over the
        downstream link (every access carries its bank and result sample)."""
        banks, tickets = self._banks, self._tickets
        bank_bits = ceil_log2(banks)
        start_event = sched["start_event"]
        n = self._n
        spec = self.spec
        rmap = microprogram(self._fmt).registers
        forward = message_layout("forward", self._fmt)
        backward = message_layout("backward", self._fmt)
        bus = self.bus

        # -- updates (tickets: up to 2 * banks in flight, finishing in order) --
        now = Signal(_COUNTER)
        m.d.sync += now.eq(now + 1)
        started = Signal(range(tickets))       # the ticket of the next update
        finished_ticket = Signal(range(tickets))  # the oldest in flight
        in_flight = Signal(range(tickets + 1))
        result_ticket = Signal(range(tickets))  # the last finished
        busy = Signal()
        m.d.comb += busy.eq(in_flight != 0)
        ever_started = Signal()
        start_stamp = [Signal(_COUNTER, name=f"start_stamp_{t}") for t in range(tickets)]
        ticket_overflow = [Signal(n, name=f"ticket_overflow_{t}") for t in range(tickets)]
        last_start = Signal(_COUNTER)
        started_count = Signal(_COUNTER)
        local_count = Signal(_COUNTER)         # samples whose local request ended everywhere
        latency = Signal(_COUNTER)
        interval = Signal(_COUNTER)
        update_count = Signal(_COUNTER)
        overflow = Signal(n)
        overflow_sticky = Signal(n)
        clear_event = Signal()
        finish_event = Signal()
        finish_stamp = Signal(_COUNTER)
        finished_overflow = sched["finished_overflow"]
        m.d.comb += [finish_event.eq(busy & sched["finished"]),
                     sched["start_bank"].eq(started[:bank_bits])]
        for t in range(tickets):
            with m.If(finished_ticket == t):
                m.d.comb += finish_stamp.eq(start_stamp[t])
        with m.If(sched["local_all"]):
            m.d.sync += local_count.eq(local_count + 1)
        # The next sample's bank is free once every board finished the local request of the
        # sample that used it before (sample started_count - banks), as the chain's
        # `staging_free`.
        staging_free = Signal()
        m.d.comb += staging_free.eq((in_flight < tickets)
                                    & ((started_count - local_count)[:_COUNTER] < banks))
        with m.If(start_event):
            m.d.sync += [started.eq(started + 1), started_count.eq(started_count + 1),
                         interval.eq(now - last_start), last_start.eq(now),
                         ever_started.eq(1)]
            for t in range(tickets):
                with m.If(started == t):
                    m.d.sync += start_stamp[t].eq(now)
        with m.If(finish_event):
            m.d.sync += [finished_ticket.eq(finished_ticket + 1),
                         result_ticket.eq(finished_ticket),
                         latency.eq(now - finish_stamp),
                         update_count.eq(update_count + 1), overflow.eq(finished_overflow[:n])]
            for t in range(tickets):
                with m.If(finished_ticket == t):
                    m.d.sync += ticket_overflow[t].eq(finished_overflow[:n])
        m.d.sync += in_flight.eq(in_flight + start_event - finish_event)
        with m.If(clear_event):
            m.d.sync += overflow_sticky.eq(Mux(finish_event, finished_overflow[:n], 0))
        with m.Elif(finish_event):
            m.d.sync += overflow_sticky.eq(overflow_sticky | finished_overflow[:n])
        m.d.comb += [self.busy.eq(busy), self.overflow_sticky.eq(overflow_sticky)]
        if n > 1:
            m.d.comb += self.link_down.eq(down_mask[:n - 1])

        select_follow = Signal(init=1)
        select_number = Signal(_COUNTER)
        select_ticket = Signal(range(tickets))
        view_ticket = Signal(range(tickets))
        m.d.comb += view_ticket.eq(Mux(select_follow, result_ticket, select_ticket))
        # The sample number of the update the reads show (update v is sample v - 1; before
        # any update, sample -1: its shadows' word 0).
        view_sample = Signal(_SAMPLE_BITS)
        m.d.comb += view_sample.eq(Mux(select_follow, update_count - 1, select_number - 1))
        selected_overflow = Signal(n)
        for t in range(tickets):
            with m.If(select_ticket == t):
                m.d.comb += selected_overflow.eq(ticket_overflow[t])
        status = Cat(busy, ever_started & ~busy, overflow_sticky.any())
        control_words = {
            "STATUS": status, "OVERFLOW": Mux(select_follow, overflow, selected_overflow),
            "OVERFLOW_STICKY": overflow_sticky,
            "LATENCY_CYCLES": latency, "INTERVAL_CYCLES": interval,
            "UPDATE_COUNT": update_count,
        }

        # -- the access, registered and decoded as the chain's --
        req = Signal(data.StructLayout({"node": 8, "addr": 8, "we": 1, "wdata": 32}))
        read_target = Signal(8)
        read_addr = Signal(8)
        m.d.comb += [read_target.eq(req.node), read_addr.eq(req.addr)]
        with m.Switch(req.addr):
            for source, receiver in forward:
                with m.Case(rmap[receiver].address):
                    with m.If(req.node != 0):
                        m.d.comb += [read_target.eq(req.node - 1),
                                     read_addr.eq(rmap[source].address)]
            for source, receiver in backward:
                with m.Case(rmap[receiver].address):
                    with m.If(req.node != n - 1):
                        m.d.comb += [read_target.eq(req.node + 1),
                                     read_addr.eq(rmap[source].address)]
        is_window = (req.addr >= LINK_WINDOW) & (req.addr < LINK_WINDOW + 16)
        decoded = Signal(data.StructLayout({
            "control": 1, "bad_target": 1, "writable": 1, "input": 1, "select": 1,
            "select_valid": 1, "control_address": 1, "link_down": 1, "target": 8, "addr": 8}))
        select_value = req.wdata[:_COUNTER - 1]
        # Update v (1-based) is selectable while it has finished and its ticket has not been
        # reused: started_count - tickets < v <= update_count (as the chain's).
        select_floor = Signal(signed(_COUNTER + 1))
        m.d.sync += select_floor.eq(started_count - tickets)
        m.d.sync += [
            decoded.control.eq(req.node == CONTROL_NODE),
            decoded.bad_target.eq((req.node >= n)
                                  | ((req.addr >= spec.node_map_size) & ~is_window)),
            decoded.writable.eq(~is_window & (req.addr < Mux(req.node == 0,
                                                              spec.writable_end_node0,
                                                              spec.writable_end))),
            decoded.select.eq(req.addr == RESULT_SELECT),
            decoded.input.eq((req.addr >= spec.input_address)
                             & (req.addr < spec.input_address + spec.input_count)),
            decoded.select_valid.eq((select_value != 0) & (select_value <= update_count)
                                    & (select_value > select_floor)),
            decoded.control_address.eq(req.addr == control_register("CONTROL").address),
            decoded.link_down.eq(req.addr == LINK_DOWN),
            decoded.target.eq(Mux(req.we | is_window, req.node, read_target)),
            decoded.addr.eq(Mux(req.we | is_window, req.addr, read_addr)),
        ]
        # Writes go to the staging bank, reads to the bank of the update the reads show.
        access_bank = Signal(range(banks))
        m.d.comb += access_bank.eq(Mux(req.we, started[:bank_bits], view_ticket[:bank_bits]))
        answer = Signal()
        answer_rdata = Signal(32)
        answer_error = Signal()
        m.d.sync += [bus.ready.eq(answer), bus.rdata.eq(answer_rdata),
                     bus.error.eq(answer_error)]
        tag = Signal(2)
        wait = Signal(range(self._timeout + 1))
        path_down = Signal()
        abandon = Signal()
        next_tag, tag_free = self._stale_tags(m, tag, abandon, decoded.target, reply_in, reply,
                                              down_mask)
        # A hop on the way to the target is known to be down: refuse at once.
        if n > 1:
            m.d.comb += path_down.eq(Cat(*(down_mask[h] & (decoded.target > h)
                                           for h in range(n - 1))).any())
        with m.FSM(name="bus_fsm"):
            with m.State("IDLE"):
                with m.If(bus.valid):
                    m.d.sync += [req.node.eq(bus.node), req.addr.eq(bus.addr),
                                 req.we.eq(bus.we), req.wdata.eq(bus.wdata)]
                    m.next = "DECODE"
            with m.State("DECODE"):
                m.next = "ACCESS"
            with m.State("ACCESS"):
                with m.If(decoded.control):
                    m.d.comb += answer.eq(1)
                    m.next = "ANSWER"
                    with m.If(req.we):
                        start = (req.wdata & CONTROL_START).any()
                        clear = (req.wdata & CONTROL_CLEAR).any()
                        with m.If(decoded.select):
                            with m.If(req.wdata[_COUNTER - 1]):
                                m.d.comb += answer_rdata.eq(req.wdata)
                                m.d.sync += select_follow.eq(1)
                            with m.Elif(decoded.select_valid):
                                m.d.comb += answer_rdata.eq(req.wdata)
                                m.d.sync += [select_follow.eq(0),
                                             select_number.eq(select_value),
                                             select_ticket.eq(select_value - 1)]
                            with m.Else():
                                m.d.comb += answer_error.eq(1)
                        with m.Elif(~decoded.control_address):
                            m.d.comb += answer_error.eq(1)
                        with m.Elif(start & ~staging_free):
                            m.d.comb += answer_error.eq(1)
                        with m.Else():
                            m.d.comb += [answer_rdata.eq(req.wdata), start_event.eq(start),
                                         clear_event.eq(clear)]
                    with m.Else():
                        with m.Switch(req.addr):
                            with m.Case(control_register("CONTROL").address):
                                m.d.comb += answer_rdata.eq(0)
                            with m.Case(RESULT_SELECT):
                                m.d.comb += answer_rdata.eq(Mux(select_follow, RESULT_FOLLOW,
                                                                select_number))
                            for name, value in control_words.items():
                                with m.Case(control_register(name).address):
                                    m.d.comb += answer_rdata.eq(value)
                            with m.Case(LINK_DOWN):
                                m.d.comb += answer_rdata.eq(down_mask[:max(n - 1, 1)]
                                                            if n > 1 else 0)
                            with m.Default():
                                m.d.comb += answer_error.eq(1)
                with m.Elif(decoded.bad_target):
                    m.d.comb += [answer.eq(1), answer_error.eq(1)]
                    m.next = "ANSWER"
                with m.Elif(req.we & (~decoded.writable
                                      | ~Mux(decoded.input, staging_free, ~busy))):
                    m.d.comb += [answer.eq(1), answer_error.eq(1)]
                    m.next = "ANSWER"
                with m.Elif(decoded.target == 0):
                    m.d.comb += local.eq(1)
                    m.d.sync += [job.addr.eq(decoded.addr), job.we.eq(req.we),
                                 job.wdata.eq(req.wdata), wait.eq(0),
                                 job.bank.eq(access_bank), job.sample.eq(view_sample)]
                    m.next = "LOCAL"
                with m.Elif(path_down | ~tag_free | (pend is None)):
                    m.d.comb += [answer.eq(1), answer_error.eq(1)]
                    m.next = "ANSWER"
                with m.Else():
                    m.d.sync += [tag.eq(next_tag), wait.eq(0)]
                    if pend is not None:
                        self._send_request(m, pend, 1, next_tag, decoded.target, decoded.addr,
                                           req.we, req.wdata, access_bank, view_sample)
                    m.next = "REMOTE"
            with m.State("LOCAL"):
                m.d.sync += wait.eq(wait + 1)
                with m.If(local_answer):
                    m.d.comb += [answer.eq(1), answer_rdata.eq(local_data),
                                 answer_error.eq(local_error)]
                    m.next = "ANSWER"
                with m.Elif(wait == self._timeout):
                    # The node's running request waits for a word that does not come.
                    m.d.comb += [answer.eq(1), answer_error.eq(1)]
                    m.next = "ABANDON"
            with m.State("ABANDON"):
                # The local read stays pending (the node is held until it is idle) and its
                # late answer is dropped; meanwhile every access is refused at once.
                with m.If(~running):
                    m.next = "IDLE"
                with m.Elif(bus.valid):
                    m.d.comb += [answer.eq(1), answer_error.eq(1)]
                    m.next = "ABANDON_ANSWER"
            with m.State("ABANDON_ANSWER"):
                m.next = "ABANDON"
            with m.State("REMOTE"):
                m.d.sync += wait.eq(wait + 1)
                with m.If(reply_in & (reply.tag == tag)):
                    m.d.comb += [answer.eq(1), answer_rdata.eq(reply.data),
                                 answer_error.eq(reply.error)]
                    m.next = "ANSWER"
                with m.Elif(path_down | (wait == self._timeout)):
                    # A hop on the way went down while the access was under way (or no answer
                    # came): refused as soon as that is known, not after the whole timeout, so
                    # the bus is free for the boards in front of the cut; its tag is kept
                    # from reuse until its late reply (_stale_tags).
                    m.d.comb += [answer.eq(1), answer_error.eq(1), abandon.eq(1)]
                    m.next = "ANSWER"
            with m.State("ANSWER"):
                m.next = "IDLE"
