"""The chain: n LinkDyn nodes wired proximal to distal over neighbour mailboxes, behind the
host's register bus (source paper Sect. 3, Fig. 8; docs/architecture.md, *Gateware blocks*).

Structure::

    host --bus--> control block (CONTROL, STATUS, counters), node register access
                    |
    node 0 --forward mailbox--> node 1 --forward mailbox--> ... --> node n-1
    node 0 <--backward mailbox-- node 1 <--backward mailbox-- ... <-- node n-1
      ^ base motion (node 0's forward_in, host-written)      zero wrench (node n-1's backward_in)
      | base wrench (node 0's f_out, mu_out)

Every node is a :class:`~linkdyn.gateware.node.LinkDynNode` with one request per segment
(``split_joint``, ``split_local``), no drain cycles between them (``interlock``) and an
``inbox`` reading the mailboxes of its neighbours (:class:`~linkdyn.gateware.mailbox.Mailbox`):
the sender's MAC writes each message word into the mailbox as it produces it (the node's
``result`` port), and the receiver reads the mailbox directly as an operand source, stalling
on a word that has not arrived yet. So a node may start a request before its neighbour has
finished, and each hop costs only the distance between the neighbour producing a word and the
node needing it, not a whole segment plus a copy.

Update (one sample): all nodes run ``joint`` at once; node i runs ``forward`` once the first
word it reads from node i-1 has arrived, then ``local``; node n-1 then runs ``distal``, node i
once the first word it reads from node i+1 has arrived. The update ends when every node has
finished ``distal``.

Policies (:data:`POLICIES`, the constructor's ``policy``):

``"sequential"``
    One update at a time (paper: sequential update). CONTROL.start is refused while an update
    runs, and so is every node register write.
``"pipelined"``
    The nodes have ``banks`` register banks (default 4,
    :data:`~linkdyn.model.microprogram.BANKED_KINDS`) and the mailboxes as many slots: sample k
    uses bank ``k mod banks``. A node may run the joint, forward and local segments of later
    samples before the distal segment of sample k ("a node starts the next forward pass while
    the previous backward pass runs further up"). CONTROL.start, and the input writes of the
    next sample (which go to the bank it will use), are taken as soon as every node has
    finished the local request of the sample that used that bank before, even while updates
    run; at most ``2 * banks`` updates are in flight.

The control block (``docs/protocol.md``, :mod:`linkdyn.model.protocol`) and the node access
rules are those of the protocol. See ``docs/chain.md`` for the bus semantics of each policy.
"""

from __future__ import annotations

import argparse
import re
import sys

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from linkdyn.model.fixedpoint import QFormat, WORD_WIDTH, ceil_log2
from linkdyn.model.microprogram import BANKS, microprogram
from linkdyn.model.protocol import (
    CONTROL_CLEAR, CONTROL_LOCAL, CONTROL_NODE, CONTROL_START, MAX_NODES, RESULT_FOLLOW,
    RESULT_SELECT, ProtocolSpec, control_register,
)

from .bus import RegisterBusSignature
from .mailbox import Mailbox, message_layout
from .verilog import export_verilog
from .node import REQUESTS, SLOT_OPS, LinkDynNode
from linkdyn.model.microprogram import node_formats

__all__ = ["LinkDynChain", "POLICIES", "TASKS", "STAGES", "RESULT_SELECT", "RESULT_FOLLOW",
           "parse_format", "main"]

#: Update policies, see the module docstring.
POLICIES = ("sequential", "pipelined")

#: The requests of one sample on one node, in order (segments joint / forward / local /
#: distal of the microprogram).
TASKS = ("joint", "forward", "local", "backward")

#: Progress of one sample on one node (per register bank): free, then waiting for / running
#: each task of :data:`TASKS`.
STAGES = ("free",) + tuple(f"{prefix}{task}" for task in TASKS for prefix in ("want_", ""))

_FREE = 0


def _want(task):
    return 1 + 2 * TASKS.index(task)


def _run(task):
    return 2 + 2 * TASKS.index(task)


_COUNTER = 32


class LinkDynChain(wiring.Component):
    """n LinkDyn nodes over block-RAM mailboxes, with the protocol's register-bus target.

    Parameters
    ----------
    n : int
        Number of nodes (joints), ``1 .. MAX_NODES``.
    fmt : QFormat
        Formats of the nodes (default :data:`~linkdyn.model.microprogram.NODE_FORMATS`; a
        QFormat: one format everywhere).
    policy : str
        Update policy, one of :data:`POLICIES` (default ``"sequential"``).
    banks : int, optional
        Register banks of the nodes and slots of the mailboxes: 1 for the sequential policy;
        2 or 4 for the pipelined one (default :data:`~linkdyn.model.microprogram.BANKS`).
        Sample k uses bank ``k mod banks``; up to ``2 * banks`` updates may be in flight.
    cordic_step_cycles : int
        Cycles per CORDIC step of the nodes (:class:`~linkdyn.gateware.node.LinkDynNode`): 2
        (default, ECP5) or 1 (fewer LUTs); per family
        :data:`linkdyn.gateware.cordic.STEP_CYCLES`. The chain's cycles do not depend on it.
    parents : sequence of int, optional
        The tree of nodes (source paper eq. 17; docs/trees.md, *The tree in gateware*):
        ``parents[j]`` is the parent node of node ``j``, ``-1`` for a root (it reads the base
        motion from its own ``forward_in`` registers), every parent before its children. Default
        the chain ``(-1, 0, ..., n - 2)``, which builds exactly the chain. The base motion is
        written into node 0 (always a root) as for a chain; the chain writes the same words into
        every other root. A parent sends its forward message into one mailbox per child (the
        same words at once); a node with several children reads the exact sum of their backward
        messages, saturated once (a saturated word raises the node's overflow flag), through a
        merge in front of its inbox (:func:`linkdyn.model.golden_tree.merge_backward`). For a
        robot, the node tree of
        :func:`linkdyn.model.golden_tree.node_tree`.
    local_loop : bool
        Build the local update (the source paper's third update policy, Sect. 3.1; sequential
        chain only; default ``False``, which builds exactly the chain without it): CONTROL's
        ``local`` bit starts an update in which every node runs its segments on its current
        registers with the words the mailboxes hold, the messages of the last chain update
        (``docs/chain.md``, *Local update*; :class:`linkdyn.sim.chain_model.ChainModel` defines
        it word for word, :class:`linkdyn.model.local_loop.LocalLoopChain` is the golden model).
        No node waits for a neighbour, and no message word is written into a mailbox (the
        neighbours' next local update reads the chain update's words). A local update is an
        update for STATUS, the counters, OVERFLOW and the result reads (``tau``).

    Members
    -------
    bus : In(RegisterBusSignature())
        The register bus, target side: node registers (``node`` 0 .. n-1) and the control block
        (``node`` = ``CONTROL_NODE``), see ``docs/chain.md``.
    busy : Out(1)
        An update is in flight (STATUS.busy).
    overflow_sticky : Out(n)
        Bit i: node i saturated a result since the last CONTROL.clear (OVERFLOW_STICKY).

    Attributes
    ----------
    nodes : list of LinkDynNode
        The nodes, proximal first.
    spec : ProtocolSpec
        The protocol definition the bus implements.

    Raises
    ------
    TypeError
        If ``n`` is not an integer or ``fmt`` not a :class:`~linkdyn.model.fixedpoint.QFormat`,
        or ``parents`` is not a sequence of integers.
    ValueError
        If ``n`` is out of range, ``policy`` unknown, ``banks`` does not fit the policy,
        ``cordic_step_cycles`` is not 1 or 2, or ``parents`` is not ``n`` parents each before
        its child (``-1 <= parents[j] < j``), or ``local_loop`` is asked of a pipelined chain
        or a tree.
    """

    def __init__(self, n, fmt=None, *, policy="sequential", banks=None, cordic_step_cycles=2,
                 parents=None, local_loop=False):
        if not isinstance(n, int) or isinstance(n, bool):
            raise TypeError(f"Node count must be an integer, not {n!r}")
        if not 1 <= n <= MAX_NODES:
            raise ValueError(f"Node count must be 1 .. {MAX_NODES}, not {n!r}")
        fmt = node_formats(fmt)
        if policy not in POLICIES:
            raise ValueError(f"Policy must be one of {POLICIES!r}, not {policy!r}")
        self._n = n
        self._fmt = fmt
        self._policy = policy
        self.spec = ProtocolSpec(n, fmt)
        pipelined = policy == "pipelined"
        if banks is None:
            banks = BANKS if pipelined else 1
        if banks not in ((2, 4) if pipelined else (1,)):
            raise ValueError(f"Bank count of the {policy} policy must be "
                             f"{'2 or 4' if pipelined else '1'}, not {banks!r}")
        self._banks = banks
        self._tickets = 2 * banks if pipelined else 1
        self._parents = _check_parents(parents, n)
        if not isinstance(local_loop, bool):
            raise TypeError(f"local_loop must be a bool, not {local_loop!r}")
        if local_loop and (pipelined or self._parents != tuple(range(-1, n - 1))):
            raise ValueError("the local loop is built into a sequential chain of nodes only, "
                             f"not a {policy} chain or a tree")
        self._local_loop = local_loop
        # Tests clear it to prove that they see a local update's mailbox writes.
        self._suppress_local_writes = True
        children = [[] for _ in range(n)]
        for node, parent in enumerate(self._parents):
            if parent >= 0:
                children[parent].append(node)
        self._children = tuple(tuple(c) for c in children)
        self.nodes = [
            LinkDynNode(fmt, split_joint=True, split_local=True, interlock=True, banks=banks,
                        inbox=(("forward_in",) if self._parents[i] >= 0 else ())
                        + (("backward_in",) if self._children[i] else ()),
                        cordic_step_cycles=cordic_step_cycles)
            for i in range(n)
        ]
        super().__init__({
            "bus": In(RegisterBusSignature()),
            "busy": Out(1),
            "overflow_sticky": Out(n),
        })

    @property
    def n(self):
        """int: number of nodes."""
        return self._n

    @property
    def fmt(self):
        """QFormat: the nodes' word format."""
        return self._fmt

    @property
    def policy(self):
        """str: the update policy."""
        return self._policy

    @property
    def banks(self):
        """int: register banks of the nodes and slots of the mailboxes (1, 2 or 4)."""
        return self._banks

    @property
    def parents(self):
        """tuple of int: the parent node of every node, ``-1`` for a root."""
        return self._parents

    @property
    def children(self):
        """tuple of tuple of int: the children of every node, in node order."""
        return self._children

    @property
    def roots(self):
        """tuple of int: the nodes that read the base motion (``parents[j] == -1``)."""
        return tuple(j for j, parent in enumerate(self._parents) if parent < 0)

    @property
    def is_chain(self):
        """bool: whether the nodes form the chain ``(-1, 0, ..., n - 2)``."""
        return self._parents == tuple(range(-1, self._n - 1))

    @property
    def local_loop(self):
        """bool: the local update is built (CONTROL.local)."""
        return self._local_loop

    @property
    def max_in_flight(self):
        """int: updates in flight at most."""
        return self._tickets

    def elaborate(self, platform):
        m = Module()
        for i, node in enumerate(self.nodes):
            m.submodules[f"node{i}"] = node
        # The update in flight is a local update (set with its start, sequential chain only).
        self._local = Signal(name="local_update") if self._local_loop else None
        forward_boxes, backward_boxes, merge_overflow = self._elaborate_mailboxes(m)
        state = _ChainState(self._n, self._banks, self._tickets)
        state.local = self._local
        m.d.sync += state.now.eq(state.now + 1)
        # The update the result reads show: the last finished one, or one the host selected
        # (RESULT_SELECT).
        m.d.comb += state.view_ticket.eq(Mux(state.select_follow, state.result_ticket,
                                             state.select_ticket))
        self._elaborate_staging(m, state)
        triggers = self._message_triggers() if any(self._children) else None
        for i in range(self._n):
            self._elaborate_progress(m, state, i, forward_boxes, backward_boxes, triggers,
                                     merge_overflow.get(i))
        self._elaborate_updates(m, state)
        shadowed = self._elaborate_results(m, state)
        self._elaborate_bus(m, state, shadowed)
        return m

    def _message_triggers(self):
        """Return the mailbox word whose arrival issues a forward (distal) request: the first
        word of the message the segment reads (then it stalls little: its neighbour keeps
        producing the words ahead of it).

        Returns
        -------
        (int, int)
            Word index in the forward and in the backward message.

        Raises
        ------
        AssertionError
            If a segment reads no mailbox word (the microprogram is not one for a chain).
        """
        rmap = microprogram(self._fmt).registers
        nodes = self.nodes

        # Every node runs the same schedule; take one that reads the message from its inbox.
        reader = {"forward": next(j for j, p in enumerate(self._parents) if p >= 0),
                  "distal": next(j for j, c in enumerate(self._children) if c)}

        def first_inbox_word(segment, layout):
            node = nodes[reader[segment]]
            receivers = [rmap[target].address for _, target in layout]
            start = node.segment_start[segment]
            for row in node.rom[start:node.segment_start["end"]]:
                if (row["op"] == SLOT_OPS.index("term") and row.get("b_inbox")
                        and row["b"] in receivers):
                    return receivers.index(row["b"])
            raise AssertionError(f"the {segment} segment reads no mailbox word")

        return (first_inbox_word("forward", message_layout("forward", self._fmt)),
                first_inbox_word("distal", message_layout("backward", self._fmt)))

    def _elaborate_mailboxes(self, m):
        """Add the mailboxes, one pair per edge of the tree: forward[c] parent(c) -> node c and
        backward[c] node c -> parent(c), and wire them to the nodes' result snoop ports
        (senders) and inbox ports (receivers); in front of the inbox of a node with several
        children, the merge of their backward messages.

        Returns
        -------
        (dict, dict, dict)
            ``forward_boxes[c]``, ``backward_boxes[c]`` per non-root node ``c``;
            ``merge_overflow[j]`` per node with several children: ``(valid, bank)``, a word of
            its merge that saturated was read (registered, the cycle after its issue).
        """
        n, banks, nodes = self._n, self._banks, self.nodes
        parents, children = self._parents, self._children
        rmap = microprogram(self._fmt).registers
        forward = message_layout("forward", self._fmt)
        backward = message_layout("backward", self._fmt)
        forward_boxes, backward_boxes = {}, {}
        for c in range(n):
            p = parents[c]
            if p < 0:
                continue
            edge = f"{p}" if self.is_chain else f"{p}_{c}"
            m.submodules[f"forward{edge}"] = forward_boxes[c] = Mailbox(len(forward), banks)
            m.submodules[f"backward{edge}"] = backward_boxes[c] = Mailbox(len(backward), banks)

        def connect_sender(box, node, layout):
            # The sender's MAC results that are message words go into the mailbox.
            hit = Signal()
            with m.Switch(node.result.addr):
                for word, (source, _) in enumerate(layout):
                    with m.Case(rmap[source].address):
                        m.d.comb += [hit.eq(1), box.sender.payload.word.eq(word)]
            valid = node.result.valid & hit
            if self._local is not None and self._suppress_local_writes:
                # A local update writes no message: the mailbox keeps the chain update's.
                valid = valid & ~self._local
            m.d.comb += [
                box.sender.valid.eq(valid),
                box.sender.payload.data.eq(node.result.data),
            ]
            if banks > 1:
                m.d.comb += box.sender.payload.slot.eq(node.result.bank)

        for c in sorted(forward_boxes):
            # A parent with several children writes the same words into each child's mailbox.
            connect_sender(forward_boxes[c], nodes[parents[c]], forward)
            connect_sender(backward_boxes[c], nodes[c], backward)

        merge_overflow = {}
        for i, node in enumerate(nodes):
            if not node.inbox_kinds:
                continue
            # The node gives the word's index in its message and its direction (from its
            # schedule ROM: no address decoding on the path to the present bit and the stall).
            sources = []  # (boxes, backward?): one box, or a node's children's backward boxes
            if parents[i] >= 0:
                sources.append(([forward_boxes[i]], 0))
            if children[i]:
                sources.append(([backward_boxes[c] for c in children[i]], 1))
            from_box = [Signal(name=f"node{i}_inbox_{k}") for k in range(len(sources))]
            from_box_issued = [Signal(name=f"node{i}_inbox_{k}_issued")
                               for k in range(len(sources))]
            for k, ((boxes, backward_box), selected, issued) in enumerate(
                    zip(sources, from_box, from_box_issued)):
                m.d.comb += selected.eq(node.inbox.backward == backward_box)
                for box in boxes:
                    m.d.comb += box.receiver.word.eq(node.inbox.word)
                    if banks > 1:
                        m.d.comb += box.receiver.slot.eq(node.inbox.bank)
                m.d.sync += issued.eq(selected)
                # The present bits the node's stall reads are a copy registered twice (the
                # mailbox may sit far from the node; the second register sits by the node's
                # stall logic): a word is seen two cycles after it is written. A slot's bits are
                # cleared only after its reader's last read of it, and the reader reads that
                # slot again only in a later request, so the copy's lag in clearing them is
                # never seen. A merged word is present when it is present in every child's box.
                present = boxes[0].receiver.words_present
                travel = Signal.like(present, name=f"node{i}_inbox_{k}_travel")
                seen = Signal.like(present, name=f"node{i}_inbox_{k}_present")
                if len(boxes) > 1:
                    present = boxes[0].receiver.words_present.as_value()
                    for box in boxes[1:]:
                        present = present & box.receiver.words_present.as_value()
                m.d.sync += [travel.eq(present), seen.eq(travel)]
                slot_bits = seen[node.inbox.bank] if banks > 1 else seen[0]
                if self._local is not None:
                    # A local update reads the words the mailbox holds: all present.
                    slot_bits = slot_bits | self._local.replicate(boxes[0].words)
                first = len(forward) * backward_box  # the node numbers forward, then backward
                m.d.comb += node.inbox.present_words[first:first + boxes[0].words].eq(slot_bits)
                if len(boxes) == 1:
                    with m.If(issued):
                        m.d.comb += node.inbox.data.eq(boxes[0].receiver.data)
                    continue
                # The merge (eq. 17): the exact sum of the children's words, saturated once.
                total = boxes[0].receiver.data
                for box in boxes[1:]:
                    total = total + box.receiver.data
                high, low = (1 << (WORD_WIDTH - 1)) - 1, -(1 << (WORD_WIDTH - 1))
                merged = Signal(signed(WORD_WIDTH), name=f"node{i}_merged")
                saturated = Signal(name=f"node{i}_merge_saturated")
                m.d.comb += [
                    saturated.eq((total > high) | (total < low)),
                    merged.eq(Mux(total > high, high, Mux(total < low, low, total))),
                ]
                with m.If(issued):
                    m.d.comb += node.inbox.data.eq(merged)
                # The word is taken when its issue did not stall; its data is read a cycle on.
                taken = Signal(name=f"node{i}_merge_taken")
                taken_bank = Signal(range(banks), name=f"node{i}_merge_bank")
                m.d.sync += [taken.eq(node.inbox.read & ~node.stall
                                      & (node.inbox.backward == 1)),
                             taken_bank.eq(node.inbox.bank)]
                merge_overflow[i] = (taken & saturated, taken_bank)
        return forward_boxes, backward_boxes, merge_overflow

    def _elaborate_staging(self, m, state):
        """Drive ``staging_free``: the staging bank is free for the next sample, every node
        has finished the local request of the sample that used it before (the last to read its
        inputs), and nothing is queued on it."""
        n, banks = self._n, self._banks
        staging_bank = state.staging_bank
        free_terms = [state.in_flight < self._tickets]
        for i in range(n):
            s = Signal(range(len(STAGES)), name=f"node{i}_staging_stage")
            q = Signal(name=f"node{i}_staging_queued")
            m.d.comb += [s.eq(state.stage[i][0]), q.eq(state.queued[i][0])]
            for b in range(1, banks):
                with m.If(staging_bank == b):
                    m.d.comb += [s.eq(state.stage[i][b]), q.eq(state.queued[i][b])]
            # The inputs are read by joint, forward and local.
            free_terms.append(~q & ((s == _FREE) | (s >= _want("backward"))))
        if banks == 1:
            free_terms = [state.in_flight == 0]
        m.d.comb += state.staging_free.eq(Cat(*free_terms).all())

    def _elaborate_progress(self, m, state, i, forward_boxes, backward_boxes, triggers,
                            merge_overflow=None):
        """Add node ``i``'s progress scheduler: per bank, the stage of its sample
        (:data:`STAGES`); the request it issues next (backward for the head sample only,
        forward once its first mailbox word arrived and its outgoing mailbox slot is empty,
        local, joint); the mailbox acknowledges; the record of a finished sample in its ticket.
        ``triggers``: :meth:`_message_triggers` (``None`` without edges); ``merge_overflow``:
        ``(valid, bank)`` of the node's merge (:meth:`_elaborate_mailboxes`), if it has one.
        """
        banks, tickets = self._banks, self._tickets
        node = self.nodes[i]
        parent, children = self._parents[i], self._children[i]
        stage, queued, node_overflow = state.stage[i], state.queued[i], state.node_overflow[i]
        hold, head_ticket = state.hold[i], state.head_ticket[i]
        if triggers is not None:
            forward_trigger, backward_trigger = triggers
        head = state.ticket_bank(head_ticket)
        # Eligible requests, in priority order: backward (head sample only), forward, local,
        # joint.
        choices = []
        for b in range(banks):
            is_head = (head == b) if banks > 1 else Const(1, 1)
            out_free = Const(1, 1)
            if parent >= 0:
                out_free = backward_boxes[i].sender.empty[b]
            arrived = Const(1, 1)
            if children:
                arrived = Cat(*(backward_boxes[c].receiver.words_present[b][backward_trigger]
                                for c in children)).all() if len(children) > 1 else \
                    backward_boxes[children[0]].receiver.words_present[b][backward_trigger]
            if state.local is not None:
                arrived, out_free = arrived | state.local, out_free | state.local
            choices.append(("backward", b, (stage[b] == _want("backward")) & is_head
                            & arrived & out_free))
        for b in range(banks):
            out_free = Const(1, 1)
            if children:
                out_free = Cat(*(forward_boxes[c].sender.empty[b] for c in children)).all() \
                    if len(children) > 1 else forward_boxes[children[0]].sender.empty[b]
            arrived = Const(1, 1)
            if parent >= 0:
                arrived = forward_boxes[i].receiver.words_present[b][forward_trigger]
            if state.local is not None:
                arrived, out_free = arrived | state.local, out_free | state.local
            choices.append(("forward", b, (stage[b] == _want("forward")) & arrived
                            & out_free))
        for b in range(banks):
            choices.append(("local", b, stage[b] == _want("local")))
        for b in range(banks):
            if banks > 1:
                # joint(k+1) only after local(k) (the CORDIC latch is read in local):
                # unless sample k (bank b-1) is finished here, it is at its backward stage.
                previous = stage[(b - 1) % banks]
                after = (head == b) | (previous >= _want("backward"))
            else:
                after = Const(1, 1)
            choices.append(("joint", b, (stage[b] == _want("joint")) & after))

        can_issue = node.ready & ~hold
        issue = {(kind, b): Signal(name=f"node{i}_issue_{kind}_{b}")
                 for kind, b, _ in choices}
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

        # Stage transitions: a request done, a request issued, an update started.
        done_kind = node.request_kind
        done_bank = node.request_bank if banks > 1 else Const(0, 1)
        backward_done = node.request_done & (done_kind == REQUESTS.index("backward"))
        for b in range(banks):
            s, q = stage[b], queued[b]
            done_here = node.request_done & (done_bank == b)
            start_here = state.start_event & (state.staging_bank == b)
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
            # Overflow of this node's current sample in bank b.
            with m.If(issue[("joint", b)]):
                m.d.sync += node_overflow[b].eq(0)
            result_bank_here = (node.result.bank == b) if banks > 1 else Const(1, 1)
            with m.If(node.result.valid & node.result.overflow & result_bank_here):
                m.d.sync += node_overflow[b].eq(1)
            if merge_overflow is not None:
                # A saturated word of the merge of its children's wrenches (eq. 17).
                merged, merged_bank = merge_overflow
                with m.If(merged & ((merged_bank == b) if banks > 1 else Const(1, 1))):
                    m.d.sync += node_overflow[b].eq(1)

        # Mailbox acknowledges: the inbox slot is read once the request that reads it ends.
        forward_done = node.request_done & (done_kind == REQUESTS.index("forward"))
        if parent >= 0:
            ack = forward_boxes[i].ack
            m.d.comb += ack.valid.eq(forward_done)
            if banks > 1:
                m.d.comb += ack.slot.eq(done_bank)
        for c in children:
            ack = backward_boxes[c].ack
            m.d.comb += ack.valid.eq(backward_done)
            if banks > 1:
                m.d.comb += ack.slot.eq(done_bank)

        # The sample finished on this node: record it in its ticket.
        bank_overflow = Signal(name=f"node{i}_bank_overflow")
        for b in range(banks):
            with m.If(done_bank == b):
                m.d.comb += bank_overflow.eq(node_overflow[b])
        with m.If(backward_done):
            m.d.sync += head_ticket.eq(head_ticket + 1 if tickets > 1 else 0)
            for t in range(tickets):
                with m.If(head_ticket == t):
                    m.d.sync += [state.done_mask[t][i].eq(1),
                                 state.ticket_overflow[t][i].eq(bank_overflow)]

    def _elaborate_updates(self, m, state):
        """Add the update start and end: tickets, time stamps, LATENCY_CYCLES,
        INTERVAL_CYCLES, UPDATE_COUNT, OVERFLOW, OVERFLOW_STICKY, updates in flight, ``busy``.
        """
        n, tickets = self._n, self._tickets
        now = state.now
        # One update in flight at most: the cycles since the last start are both intervals
        # (start to start, start to its finish), one counter instead of time stamps and their
        # differences (the same words modulo 2**32: `now` starts at 0 as this counter does).
        since_start = Signal(_COUNTER, name="since_start")
        if tickets == 1:
            m.d.sync += since_start.eq(since_start + 1)
        with m.If(state.start_event):
            m.d.sync += [
                state.started.eq(state.started + 1 if tickets > 1 else 0),
                state.started_count.eq(state.started_count + 1),
                state.ever_started.eq(1),
            ]
            if tickets == 1:
                m.d.sync += [state.interval.eq(since_start), since_start.eq(1)]
            else:
                m.d.sync += [state.interval.eq(now - state.last_start), state.last_start.eq(now)]
                for t in range(tickets):
                    with m.If(state.started == t):
                        m.d.sync += state.start_stamp[t].eq(now)
        finish_event = Signal()
        finish_overflow = Signal(n)
        finish_stamp = Signal(_COUNTER)
        for t in range(tickets):
            with m.If(state.finished == t):
                m.d.comb += [finish_event.eq((state.in_flight != 0) & state.done_mask[t].all()),
                             finish_overflow.eq(state.ticket_overflow[t]),
                             finish_stamp.eq(state.start_stamp[t])]
        with m.If(finish_event):
            m.d.sync += [
                state.finished.eq(state.finished + 1 if tickets > 1 else 0),
                state.result_ticket.eq(state.finished),
                state.latency.eq(since_start if tickets == 1 else now - finish_stamp),
                state.update_count.eq(state.update_count + 1),
                state.overflow.eq(finish_overflow),
            ]
            for t in range(tickets):
                with m.If(state.finished == t):
                    m.d.sync += state.done_mask[t].eq(0)
        m.d.sync += state.in_flight.eq(state.in_flight + state.start_event - finish_event)
        with m.If(state.clear_event):
            # An update finishing in the cycle of the clear keeps its flags.
            m.d.sync += state.overflow_sticky.eq(Mux(finish_event, finish_overflow, 0))
        with m.Elif(finish_event):
            m.d.sync += state.overflow_sticky.eq(state.overflow_sticky | finish_overflow)
        m.d.comb += [self.busy.eq(state.busy), self.overflow_sticky.eq(state.overflow_sticky)]

    def _elaborate_results(self, m, state):
        """Add the results of every update, per ticket, for reads that never wait: every
        node's tau, and node 0's f_out, mu_out (the base wrench).

        A node's words are one memory (word ``j`` of ticket ``t`` at ``j * tickets + t``): a
        node writes one result per cycle, and a read takes one word, so the memory's read port
        (LUT RAM) is the read mux.

        Returns
        -------
        list of (int, list of int, ReadPort)
            Per node: its index, the addresses of its shadowed words (in memory order) and the
            memory's combinational read port, whose address the bus target drives.
        """
        rmap = microprogram(self._fmt).registers
        backward = message_layout("backward", self._fmt)
        tickets = self._tickets
        shadowed = []
        for i, node in enumerate(self.nodes):
            names = ["tau"] + ([source for source, _ in backward] if i == 0 else [])
            addresses = [rmap[name].address for name in names]
            memory = Memory(shape=WORD_WIDTH, depth=tickets * len(names), init=[])
            m.submodules[f"result{i}"] = memory
            write = memory.write_port()
            read = memory.read_port(domain="comb")
            word = Signal(range(len(names)), name=f"result{i}_word")
            hit = Signal(name=f"result{i}_hit")
            with m.Switch(node.result.addr):
                for j, address in enumerate(addresses):
                    with m.Case(address):
                        m.d.comb += [word.eq(j), hit.eq(1)]
            ticket = state.head_ticket[i] if tickets > 1 else 0
            m.d.comb += [
                write.en.eq(node.result.valid & hit),
                write.data.eq(node.result.data),
                write.addr.eq(word * tickets + ticket),
            ]
            shadowed.append((i, addresses, read))
        return shadowed

    def _elaborate_bus(self, m, state, shadowed):
        """Add the register-bus target: the control block (CONTROL, STATUS, counters,
        RESULT_SELECT) and the node register access (writes, held reads, shadowed results).

        The request is registered when it is seen (IDLE) and decoded in the next cycle
        (DECODE) into flip-flops: ACCESS decides from those, so neither the initiator's state
        decoding nor the address comparisons come before the access's own decisions.
        """
        n, banks, tickets = self._n, self._banks, self._tickets
        spec = self.spec
        rmap = microprogram(self._fmt).registers
        bus = self.bus
        nodes = self.nodes
        forward = message_layout("forward", self._fmt)
        backward = message_layout("backward", self._fmt)
        busy, hold = state.busy, state.hold
        select_follow, select_ticket = state.select_follow, state.select_ticket
        select_number, update_count = state.select_number, state.update_count
        req = Signal(data.StructLayout({"node": 8, "addr": 8, "we": 1, "wdata": 32}))
        status = Cat(busy, state.ever_started & ~busy, state.overflow_sticky.any())
        selected_overflow = Signal(n)
        for t in range(tickets):
            with m.If(select_ticket == t):
                m.d.comb += selected_overflow.eq(state.ticket_overflow[t])
        control_words = {
            "STATUS": status, "OVERFLOW": Mux(select_follow, state.overflow, selected_overflow),
            "OVERFLOW_STICKY": state.overflow_sticky, "LATENCY_CYCLES": state.latency,
            "INTERVAL_CYCLES": state.interval, "UPDATE_COUNT": update_count,
        }
        # RESULT_SELECT: update number v (1-based, as UPDATE_COUNT counts) is selectable while
        # it has finished and its ticket has not been reused: started_count - tickets < v.
        # `select_floor` = started_count - tickets, registered (it is read two cycles after
        # the transaction that may start an update), so that the check is two comparisons side
        # by side, not an adder before a comparison.
        select_value = req.wdata[:_COUNTER - 1]
        if tickets == 1:
            # started_count = update_count + in_flight: with one ticket, v <= update_count and
            # started_count - 1 < v hold together only for v == update_count, nothing in
            # flight (an equality instead of a subtraction and two comparisons).
            select_valid = ((select_value != 0) & (update_count == select_value)
                            & (state.in_flight == 0))
        else:
            select_floor = Signal(signed(_COUNTER + 1))
            m.d.sync += select_floor.eq(state.started_count - tickets)
            select_valid = ((select_value != 0) & (select_value <= update_count)
                            & (select_value > select_floor))
        control_address = control_register("CONTROL").address
        is_node = req.node < n
        target = Signal(range(n))          # node of a node-register access
        target_addr = Signal(rmap.depth.bit_length())
        read_target = Signal(range(n))
        read_addr = Signal.like(target_addr)
        m.d.comb += [target.eq(req.node), target_addr.eq(req.addr)]
        # Node reads: results from their shadows, mailbox words from the sender's register,
        # the rest from the node (held idle).
        # one-hot: the shadowed word addressed (DECODE)
        shadow_hits = Signal(sum(len(addresses) for _, addresses, _ in shadowed))
        shadow_word = Signal(WORD_WIDTH)
        k = 0
        for i, addresses, read in shadowed:
            hits = []
            for j, address in enumerate(addresses):
                m.d.sync += shadow_hits[k].eq((req.node == i) & (req.addr == address))
                hits.append((j, shadow_hits[k]))
                k += 1
            word = 0
            for j, hit in hits[1:]:
                word = word | Mux(hit, j, 0)
            m.d.comb += read.addr.eq(word * tickets + state.view_ticket)
            with m.If(Cat(*(hit for _, hit in hits)).any()):
                m.d.comb += shadow_word.eq(read.data)
        m.d.comb += [read_target.eq(target), read_addr.eq(target_addr)]
        if self.is_chain:
            with m.Switch(req.addr):
                for _, (source, receiver) in enumerate(forward):
                    with m.Case(rmap[receiver].address):
                        with m.If(req.node != 0):
                            m.d.comb += [read_target.eq(req.node - 1),
                                         read_addr.eq(rmap[source].address)]
                for _, (source, receiver) in enumerate(backward):
                    with m.Case(rmap[receiver].address):
                        with m.If(req.node != n - 1):
                            m.d.comb += [read_target.eq(req.node + 1),
                                         read_addr.eq(rmap[source].address)]
        else:
            # forward_in of a node reads its parent's forward_out, backward_in its only child's
            # backward_out; a merged backward_in is not stored anywhere: reading it is refused.
            merged_read = Signal()
            branch_points = [j for j, c in enumerate(self._children) if len(c) > 1]
            with m.Switch(req.addr):
                for _, (source, receiver) in enumerate(forward):
                    with m.Case(rmap[receiver].address):
                        with m.Switch(req.node):
                            for j, parent in enumerate(self._parents):
                                if parent >= 0:
                                    with m.Case(j):
                                        m.d.comb += [read_target.eq(parent),
                                                     read_addr.eq(rmap[source].address)]
                for _, (source, receiver) in enumerate(backward):
                    with m.Case(rmap[receiver].address):
                        with m.Switch(req.node):
                            for j, kids in enumerate(self._children):
                                if len(kids) == 1:
                                    with m.Case(j):
                                        m.d.comb += [read_target.eq(kids[0]),
                                                     read_addr.eq(rmap[source].address)]
                            if branch_points:
                                with m.Case(*branch_points):
                                    m.d.comb += merged_read.eq(1)
        bad_target = ~is_node | (req.addr >= spec.node_map_size)
        if not self.is_chain:
            bad_target = bad_target | merged_read
        is_input = (req.addr >= spec.input_address) & (req.addr < spec.input_address
                                                       + spec.input_count)
        writable = req.addr < Mux(req.node == 0, spec.writable_end_node0, spec.writable_end)
        # The decoding, registered (valid from ACCESS on: `req` holds until the next IDLE).
        # select_valid may be decided a cycle early: update_count only grows, and only this
        # transaction can start an update (started_count).
        decoded = Signal(data.StructLayout({
            "control": 1, "bad_target": 1, "writable": 1, "input": 1, "select": 1,
            "select_valid": 1, "control_address": 1,
            "read_target": range(n), "read_addr": len(target_addr)}))
        m.d.sync += [
            decoded.control.eq(req.node == CONTROL_NODE),
            decoded.bad_target.eq(bad_target),
            decoded.writable.eq(writable),
            decoded.input.eq(is_input),
            decoded.select.eq(req.addr == RESULT_SELECT),
            decoded.select_valid.eq(select_valid),
            decoded.control_address.eq(req.addr == control_address),
            decoded.read_target.eq(read_target),
            decoded.read_addr.eq(read_addr),
        ]
        write_allowed = Mux(decoded.input, state.staging_free, ~busy)

        node_hold = Signal()
        access_node = Signal(range(n))
        access_addr = Signal.like(target_addr)
        read_data = Signal(WORD_WIDTH)
        write_ready = Signal()
        busy_of = Signal()
        held = Signal()
        with m.Switch(access_node):
            for i, node in enumerate(nodes):
                with m.Case(i):
                    m.d.comb += [read_data.eq(node.ext.read_data),
                                 write_ready.eq(node.ext.write_ready), busy_of.eq(node.busy),
                                 held.eq(hold[i])]
        # A node's hold is a register (one cycle after the state that holds it): a node read
        # goes on once the node is idle *and* held, so it can no longer take a request.
        for i, node in enumerate(nodes):
            m.d.sync += hold[i].eq(node_hold & (access_node == i))
            m.d.comb += [
                node.ext.addr.eq(access_addr),
                node.ext.write_data.eq(req.wdata),
                node.hold.eq(hold[i]),
            ]
            if banks > 1:
                m.d.comb += node.ext.bank.eq(Mux(req.we, state.staging_bank, state.result_bank))

        # The answer of a transaction (ready, rdata, error) is decided in one state and
        # registered onto the bus: the initiator sees it one cycle later, in the ANSWER state,
        # from flip-flops (no path from a node's block RAM or the decoding of the access into
        # the initiator's logic).
        answer = Signal()
        answer_rdata = Signal(WORD_WIDTH)
        answer_error = Signal()
        m.d.sync += [bus.ready.eq(answer), bus.rdata.eq(answer_rdata),
                     bus.error.eq(answer_error)]
        read_latency = nodes[0].ext_read_latency
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
                        if state.local is not None:
                            # CONTROL.local starts a local update (start wins over it).
                            local = (req.wdata & CONTROL_LOCAL).any()
                            with m.If(state.start_event):
                                m.d.sync += state.local.eq(local & ~start)
                            start = start | local
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
                        with m.Elif(start & ~state.staging_free):
                            m.d.comb += answer_error.eq(1)
                        with m.Else():
                            m.d.comb += [answer_rdata.eq(req.wdata),
                                         state.start_event.eq(start),
                                         state.clear_event.eq(clear)]
                    with m.Else():
                        with m.Switch(req.addr):
                            with m.Case(control_address):
                                m.d.comb += answer_rdata.eq(0)
                            with m.Case(RESULT_SELECT):
                                m.d.comb += answer_rdata.eq(Mux(select_follow, RESULT_FOLLOW,
                                                             select_number))
                            for name, value in control_words.items():
                                with m.Case(control_register(name).address):
                                    m.d.comb += answer_rdata.eq(value)
                            with m.Default():
                                m.d.comb += answer_error.eq(1)
                with m.Elif(decoded.bad_target):
                    m.d.comb += [answer.eq(1), answer_error.eq(1)]
                    m.next = "ANSWER"
                with m.Elif(req.we):
                    with m.If(~decoded.writable | ~write_allowed):
                        m.d.comb += [answer.eq(1), answer_error.eq(1)]
                        m.next = "ANSWER"
                    with m.Else():
                        m.d.sync += [access_node.eq(target), access_addr.eq(target_addr)]
                        m.next = "WRITE"
                with m.Elif(shadow_hits.any()):
                    m.d.comb += [answer.eq(1), answer_rdata.eq(shadow_word)]
                    m.next = "ANSWER"
                with m.Else():
                    m.d.sync += [access_node.eq(decoded.read_target),
                                 access_addr.eq(decoded.read_addr)]
                    m.next = "READ"
            with m.State("WRITE"):
                other_roots = [j for j in self.roots if j != 0]
                if other_roots:
                    # Node 0's base motion is every root's: the write goes to all of them at
                    # once, and is done when each of them has taken it.
                    base = ((access_addr >= spec.base_motion_address)
                            & (access_addr < spec.writable_end_node0) & (access_node == 0))
                    ready_all = write_ready
                    for j in other_roots:
                        ready_all = ready_all & (~base | nodes[j].ext.write_ready)
                    write_done = Signal(name="write_done")
                    m.d.comb += write_done.eq(ready_all)
                else:
                    write_done = write_ready
                for i, node in enumerate(nodes):
                    enable = access_node == i
                    if i in other_roots:
                        enable = enable | base
                    m.d.comb += node.ext.write_enable.eq(enable)
                with m.If(write_done):
                    m.d.comb += [answer.eq(1), answer_rdata.eq(req.wdata)]
                    m.next = "ANSWER"
            with m.State("READ"):
                # Hold the node: it takes no new request; once idle, its read port is ours.
                m.d.comb += node_hold.eq(1)
                with m.If(~busy_of & held):
                    m.next = "READ_FETCH_1" if read_latency > 1 else "READ_DATA"
            for k in range(1, read_latency):
                with m.State(f"READ_FETCH_{k}"):
                    # The node's block RAM and the register behind it (ext_read_latency).
                    m.d.comb += node_hold.eq(1)
                    m.next = f"READ_FETCH_{k + 1}" if k + 1 < read_latency else "READ_DATA"
            with m.State("READ_DATA"):
                m.d.comb += [node_hold.eq(1), answer.eq(1), answer_rdata.eq(read_data)]
                m.next = "ANSWER"
            with m.State("ANSWER"):
                # The registered answer is on the bus (ready) in this cycle.
                m.next = "IDLE"
        return m


def _check_parents(parents, n):
    """Return ``parents`` as a tuple (default the chain of ``n`` nodes), or raise."""
    if parents is None:
        return tuple(range(-1, n - 1))
    if isinstance(parents, (str, bytes)) or not hasattr(parents, "__len__"):
        raise TypeError(f"Parents must be a sequence of {n} integers, not {parents!r}")
    values = tuple(parents)
    if not all(isinstance(p, int) and not isinstance(p, bool) for p in values):
        raise TypeError(f"Parents must be a sequence of {n} integers, not {parents!r}")
    if len(values) != n:
        raise ValueError(f"Parents must have one entry per node ({n}), not {len(values)}")
    for node, parent in enumerate(values):
        if not -1 <= parent < node:
            raise ValueError(f"Parent of node {node} must be -1 .. {node - 1} (a root or an "
                             f"earlier node), not {parent!r}")
    return values


class _ChainState:
    """The signals the parts of :meth:`LinkDynChain.elaborate` share: time, tickets (updates
    in flight), the counters of the control block, the result view, the per-node progress and
    the update events.

    Parameters
    ----------
    n, banks, tickets : int
        Nodes, register banks, tickets (updates in flight at most).
    """

    def __init__(self, n, banks, tickets):
        self._bank_bits = ceil_log2(banks)
        self._banks = banks
        # -- time, tickets (updates in flight) --
        self.now = Signal(_COUNTER, name="now")
        self.started = Signal(range(tickets), name="started")    # the next update started
        self.finished = Signal(range(tickets), name="finished")  # the oldest in flight
        self.in_flight = Signal(range(tickets + 1), name="in_flight")
        self.result_ticket = Signal(range(tickets), name="result_ticket")  # the last finished
        self.ever_started = Signal(name="ever_started")
        self.start_stamp = [Signal(_COUNTER, name=f"start_stamp_{t}") for t in range(tickets)]
        self.done_mask = [Signal(n, name=f"done_mask_{t}") for t in range(tickets)]
        self.ticket_overflow = [Signal(n, name=f"ticket_overflow_{t}")
                                for t in range(tickets)]
        self.last_start = Signal(_COUNTER, name="last_start")
        self.started_count = Signal(_COUNTER, name="started_count")
        self.latency = Signal(_COUNTER, name="latency")
        self.interval = Signal(_COUNTER, name="interval")
        self.update_count = Signal(_COUNTER, name="update_count")
        self.overflow = Signal(n, name="overflow")
        self.overflow_sticky = Signal(n, name="overflow_sticky")
        # -- the update the result reads show (RESULT_SELECT) --
        self.select_follow = Signal(init=1, name="select_follow")
        self.select_ticket = Signal(range(tickets), name="select_ticket")
        self.select_number = Signal(_COUNTER, name="select_number")
        self.view_ticket = Signal(range(tickets), name="view_ticket")
        # -- per node progress --
        self.stage = [[Signal(range(len(STAGES)), name=f"node{i}_stage_{b}")
                       for b in range(banks)] for i in range(n)]
        self.queued = [[Signal(name=f"node{i}_queued_{b}") for b in range(banks)]
                       for i in range(n)]
        self.node_overflow = [[Signal(name=f"node{i}_overflow_{b}") for b in range(banks)]
                              for i in range(n)]
        self.head_ticket = [Signal(range(tickets), name=f"node{i}_head") for i in range(n)]
        self.hold = [Signal(name=f"node{i}_hold") for i in range(n)]
        # -- events --
        self.start_event = Signal(name="start_event")  # an update starts (CONTROL.start taken)
        self.clear_event = Signal(name="clear_event")
        self.staging_free = Signal(name="staging_free")  # the next sample's bank is free
        self.local = None  # with the local loop: the update in flight is a local update

    def ticket_bank(self, ticket):
        """Return the register bank of a ticket."""
        return ticket[:self._bank_bits] if self._banks > 1 else Const(0, 1)

    @property
    def staging_bank(self):
        """Value: the bank the next update's inputs are written to."""
        return self.ticket_bank(self.started)

    @property
    def result_bank(self):
        """Value: the bank of the update the result reads show."""
        return self.ticket_bank(self.view_ticket)

    @property
    def busy(self):
        """Value: an update is in flight."""
        return self.in_flight != 0


def parse_format(text):
    """Return the :class:`~linkdyn.model.fixedpoint.QFormat` named ``"Q<i>.<f>"``.

    Raises
    ------
    ValueError
        If ``text`` is not of that form.
    """
    match = re.fullmatch(r"[Qq](\d+)\.(\d+)", text.strip())
    if match is None:
        raise ValueError(f"Format must look like 'Q15.16', not {text!r}")
    return QFormat(int(match.group(1)), int(match.group(2)))


def main(argv=None):
    """Export a chain as Verilog: ``python -m linkdyn.gateware.chain --nodes 6 --out F``."""
    parser = argparse.ArgumentParser(
        prog="python -m linkdyn.gateware.chain",
        description="Write the LinkDyn chain (n nodes, register-bus target) as Verilog. The "
                    "robot constants are registers loaded over the bus at run time: one file "
                    "serves every robot with n joints.")
    parser.add_argument("--nodes", type=int, required=True, help="number of nodes n (1..32)")
    parser.add_argument("--format", default=None,
                        help="one word format everywhere, e.g. Q15.16 (default the node's "
                             "formats per quantity, linkdyn.model.microprogram.NODE_FORMATS)")
    parser.add_argument("--policy", choices=POLICIES, default="sequential",
                        help="update policy (default sequential)")
    parser.add_argument("--name", default=None,
                        help="Verilog module name (default linkdyn_chain)")
    parser.add_argument("--parents", default=None,
                        help="a tree of nodes: the parent of every node, comma-separated, -1 "
                             "for a root (e.g. -1,0,1,0,3; default the chain)")
    parser.add_argument("--local-loop", action="store_true",
                        help="build the local update (CONTROL.local; sequential chain only)")
    parser.add_argument("--out", required=True, help="output Verilog file")
    args = parser.parse_args(argv)
    try:
        fmt = node_formats(None if args.format is None else parse_format(args.format))
        parents = None
        if args.parents is not None:
            try:
                parents = [int(p) for p in args.parents.split(",")]
            except ValueError:
                raise ValueError(f"Parents must be comma-separated integers, not "
                                 f"{args.parents!r}") from None
        chain = LinkDynChain(args.nodes, fmt, policy=args.policy, parents=parents,
                             local_loop=args.local_loop)
    except (TypeError, ValueError) as error:
        parser.error(str(error))
    path = export_verilog(chain, args.name or "linkdyn_chain", args.out)
    shape = "" if chain.is_chain else f", tree {','.join(map(str, chain.parents))}"
    shape += ", local loop" if chain.local_loop else ""
    print(f"wrote {path} ({args.nodes} nodes, {fmt.name}, {args.policy}{shape})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
