"""The chain in Python behind the register bus: :class:`ChainModel`, the register target that
predicts :class:`~linkdyn.gateware.chain.LinkDynChain` (sequential policy) word for word, for
the :class:`~linkdyn.model.protocol.ReferenceEngine`; a tree of nodes
(``LinkDynChain(n, parents=...)``) when the spec has ``parents``."""

from __future__ import annotations

import numpy as np

from linkdyn.model import protocol as P
from linkdyn.model.fixedpoint import signed_word
from linkdyn.model.golden import run_segment
from linkdyn.model.golden_tree import merge_backward

__all__ = ["ChainModel", "TIMING_MARKS"]

_MASK = 0xFFFFFFFF
#: Words :class:`ChainModel` answers for the timing-dependent control words: the comparison
#: takes the board's words at these places (the reply's CRC is then recomputed).
TIMING_MARKS = {0x7EA7_0004: "LATENCY_CYCLES", 0x7EA7_0005: "INTERVAL_CYCLES"}
_MARK_OF = {name: mark for mark, name in TIMING_MARKS.items()}


class ChainModel(P.RegisterTarget):
    """:class:`~linkdyn.gateware.chain.LinkDynChain` (sequential policy) behind the register bus,
    in Python: the target of the :class:`~linkdyn.model.protocol.ReferenceEngine` that predicts
    the board's replies.

    Every node's host-visible register words are kept (power-up: all 0, the register files'
    initial value). An update (CONTROL.start) runs the golden model's microprogram segments
    (:func:`linkdyn.model.golden.run_segment`) on those words as
    :func:`~linkdyn.model.golden.rnea_fixed` does, so that any constants and inputs, not only a
    robot's, give the chain's words: joint, forward and local from node 0 to node n-1, each
    node's ``forward_in`` taken from its predecessor's forward outputs (node 0: its own,
    the base motion), then distal from node n-1 to node 0, each node's ``backward_in`` from its
    successor's backward outputs (node n-1: its own). Reads of node i's mailbox registers show
    the sender's words, as the chain's bus does. An update ends at once.

    A spec with a tree (``spec.parents``, docs/trees.md, *The tree in gateware*) gives the tree
    of nodes: forward from each node's parent, the base motion written into node 0 also into
    every other root; backward from the only child, or the exact sum of the children's
    messages saturated once (:func:`~linkdyn.model.golden_tree.merge_backward`; a saturated
    word raises the node's overflow flag); a read of a branch point's ``backward_in`` (a sum
    stored nowhere) is refused.

    A spec with the local loop (``spec.local_loop``, ``LinkDynChain(..., local_loop=True)``)
    also takes CONTROL.local (without CONTROL.start): the *local update* (:meth:`local_update`).

    Parameters
    ----------
    spec : ProtocolSpec

    Attributes
    ----------
    memory : list of list of int
        Per node, the words at addresses ``0 .. node_map_size - 1`` (unsigned).
    control : dict
        OVERFLOW, OVERFLOW_STICKY, UPDATE_COUNT, RESULT_SELECT.
    updates : int
        Updates run.
    """

    def __init__(self, spec):
        self.spec = spec
        rmap = spec.registers
        self.memory = [[0] * spec.node_map_size for _ in range(spec.n_nodes)]
        self.control = {"OVERFLOW": 0, "OVERFLOW_STICKY": 0, "UPDATE_COUNT": 0,
                        "RESULT_SELECT": P.RESULT_FOLLOW}
        self.updates = 0
        self._names = [(reg.name, reg.address) for reg in rmap if reg.address is not None]
        self._forward = rmap.forward_message
        self._backward = rmap.backward_message
        self._redirect = {}
        for source, receiver in self._forward:
            self._redirect[rmap[receiver].address] = ("forward", rmap[source].address)
        for source, receiver in self._backward:
            self._redirect[rmap[receiver].address] = ("backward", rmap[source].address)
        self.parents = spec.parents
        self.children = tuple(tuple(c for c in range(spec.n_nodes) if self.parents[c] == i)
                              for i in range(spec.n_nodes))
        self._roots = tuple(i for i, parent in enumerate(self.parents) if parent < 0)
        self._base_motion = {rmap[receiver].address for _, receiver in self._forward}

    def read(self, node, addr):
        access = self.spec.access(node, addr)
        if not access.exists or access.owner == "engine":
            return False, 0
        if node == P.CONTROL_NODE:
            name = next(reg.name for reg in P.CONTROL_REGISTERS if reg.address == addr)
            if name == "CONTROL":
                return True, 0
            if name == "STATUS":
                return True, ((P.STATUS_DONE if self.updates else 0)
                              | (P.STATUS_OVERFLOW if self.control["OVERFLOW_STICKY"] else 0))
            if name in _MARK_OF:
                return True, _MARK_OF[name]
            return True, self.control[name]
        if addr in self._redirect:
            direction, source = self._redirect[addr]
            if direction == "forward" and self.parents[node] >= 0:
                return True, self.memory[self.parents[node]][source]
            if direction == "backward" and len(self.children[node]) > 1:
                return False, 0
            if direction == "backward" and self.children[node]:
                return True, self.memory[self.children[node][0]][source]
        return True, self.memory[node][addr]

    def write(self, node, addr, word):
        access = self.spec.access(node, addr)
        if not access.exists or not access.writable or access.owner == "engine":
            return False
        if node != P.CONTROL_NODE:
            targets = self._roots if node == 0 and addr in self._base_motion else (node,)
            for target in targets:
                self.memory[target][addr] = word & _MASK
            return True
        if addr == P.RESULT_SELECT:
            # The sequential chain keeps one update: `follow`, or the last update's number
            # (which shows the same words); a number reads back as written.
            number = word & (P.RESULT_FOLLOW - 1)
            if word & P.RESULT_FOLLOW:
                self.control["RESULT_SELECT"] = P.RESULT_FOLLOW
            elif number != 0 and number == self.control["UPDATE_COUNT"]:
                self.control["RESULT_SELECT"] = number
            else:
                return False
            return True
        if word & P.CONTROL_CLEAR:
            self.control["OVERFLOW_STICKY"] = 0
        if word & P.CONTROL_START:
            self._update()
        elif word & P.CONTROL_LOCAL and self.spec.local_loop:
            self.local_update()
        return True

    def local_update(self):
        """Run a local update (CONTROL.local; source paper Sect. 3.1, the third policy).

        Every node runs joint, forward, local and distal on its own register words as they
        stand (constants and inputs as last written), with the ``forward_in`` and
        ``backward_in`` words of the last chain update (the words the mailboxes hold; 0 before
        the first), and no node's message reaches a neighbour: node i's result does not depend
        on any other node's current registers. On a node's registers as the last chain update
        left them with new ``q, qd, qdd`` this is
        :meth:`linkdyn.model.local_loop.LocalLoopChain.local_step`, word for word. Counters,
        OVERFLOW and the results are those of an update.
        """
        spec = self.spec
        overflow = 0
        for i in range(spec.n_nodes):
            regs = self._registers(i)
            for segment in ("joint", "forward", "local", "distal"):
                if run_segment(regs, segment, spec.fmt):
                    overflow |= 1 << i
            # The received words (forward_in, backward_in) are read, never written: they stay
            # the last chain update's.
            for name, addr in self._names:
                self.memory[i][addr] = int(regs[name]) & _MASK
        self._count(overflow)

    def _registers(self, node):
        return {name: np.array(signed_word(self.memory[node][addr]), dtype=np.int64)
                for name, addr in self._names}

    def _update(self):
        spec = self.spec
        n = spec.n_nodes
        nodes = []
        overflow = 0
        for i in range(n):
            regs = self._registers(i)
            if self.parents[i] >= 0:
                for source, receiver in self._forward:
                    regs[receiver] = nodes[self.parents[i]][source].copy()
            for segment in ("joint", "forward", "local"):
                if run_segment(regs, segment, spec.fmt):
                    overflow |= 1 << i
            nodes.append(regs)
        for i in reversed(range(n)):
            regs = nodes[i]
            children = self.children[i]
            if len(children) == 1:
                for source, receiver in self._backward:
                    regs[receiver] = nodes[children[0]][source].copy()
            elif children:
                merged, saturated = merge_backward(
                    [[int(nodes[c][source]) for source, _ in self._backward] for c in children])
                for word, (_, receiver) in zip(merged, self._backward):
                    regs[receiver] = np.array(word, dtype=np.int64)
                if saturated:
                    overflow |= 1 << i
            if run_segment(regs, "distal", spec.fmt):
                overflow |= 1 << i
        for i, regs in enumerate(nodes):
            for name, addr in self._names:
                self.memory[i][addr] = int(regs[name]) & _MASK
        self._count(overflow)

    def _count(self, overflow):
        c = self.control
        c["OVERFLOW"] = overflow
        c["OVERFLOW_STICKY"] |= overflow
        c["UPDATE_COUNT"] = (c["UPDATE_COUNT"] + 1) & _MASK
        self.updates += 1
