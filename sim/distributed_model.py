"""The distributed chain in Python behind the register bus, with its links' faults:
:class:`DistributedChainModel`, a register target for the
:class:`~linkdyn.model.protocol.ReferenceEngine` (a software board for host tests).

It answers as :class:`~linkdyn.sim.chain_model.ChainModel` (the golden model's words) plus the
distributed chain's words (``docs/distributed.md``, *Faults*): LINK_DOWN, the link window of
every board, and what a cut does: the boards behind it refuse every access (the gateware
answers ``error`` after its timeout, then at once), an update started while a hop is cut stays
busy and ends once every hop is restored (the nodes behind the cut waited for their words), no
board is reset. The link counters other than ``link_drops`` depend on timing and read 0 here;
the simulated board (:class:`~linkdyn.sim.board.SimulatedBoard` with ``boards``) has the real
ones.
"""

from __future__ import annotations

from linkdyn.model import protocol as P

from .chain_model import ChainModel

__all__ = ["DistributedChainModel"]

_LINK_DOWN = P.control_register("LINK_DOWN").address
_STATUS = P.control_register("STATUS").address
_CONTROL = P.control_register("CONTROL").address
_WINDOW = {w.address: w for w in P.LINK_WORDS_MAP}


class DistributedChainModel(ChainModel):
    """A :class:`~linkdyn.gateware.distributed.DistributedChain` behind the register bus, in
    Python, with cuts.

    Parameters
    ----------
    spec : ProtocolSpec
        A distributed spec (``boards`` given).

    Raises
    ------
    ValueError
        If ``spec`` is not distributed.
    """

    def __init__(self, spec):
        if not spec.distributed:
            raise ValueError(f"DistributedChainModel needs ProtocolSpec(boards=...), not {spec!r}")
        super().__init__(spec)
        self.down = 0                     # bit h: hop h is cut
        self.pending = False              # an update waits for a hop to be restored
        self.link_drops = [[0, 0] for _ in range(spec.n_nodes)]

    def cut(self, hop):
        """Cut hop ``hop`` (board ``hop`` to ``hop + 1``), both directions."""
        self._check_hop(hop)
        if not self.down >> hop & 1:
            self.link_drops[hop][1] += 1
            self.link_drops[hop + 1][0] += 1
        self.down |= 1 << hop

    def restore(self, hop):
        """Restore hop ``hop``; a pending update ends once no hop is cut."""
        self._check_hop(hop)
        self.down &= ~(1 << hop)
        if self.pending and not self.down:
            self.pending = False
            self._update()

    def _check_hop(self, hop):
        if not isinstance(hop, int) or not 0 <= hop < self.spec.n_nodes - 1:
            raise ValueError(f"Hop must be 0 .. {self.spec.n_nodes - 2}, not {hop!r}")

    def _reachable(self, node):
        return not any(self.down >> h & 1 for h in range(node))

    def read(self, node, addr):
        access = self.spec.access(node, addr)
        if not access.exists or access.owner == "engine":
            return False, 0
        if node == P.CONTROL_NODE:
            if addr == _LINK_DOWN:
                return True, self.down
            if addr == _STATUS and self.pending:
                return True, P.STATUS_BUSY | (P.STATUS_OVERFLOW
                                              if self.control["OVERFLOW_STICKY"] else 0)
            return super().read(node, addr)
        if not self._reachable(node):
            return False, 0
        if addr in _WINDOW:
            return True, self._window(node, _WINDOW[addr])
        return super().read(node, addr)

    def _window(self, node, word):
        n = self.spec.n_nodes
        port = P.LINK_PORTS.index(word.port)
        neighbour = node - 1 if port == 0 else node + 1
        if not 0 <= neighbour < n:
            return 0
        if word.field == "link_drops":
            return self.link_drops[node][port]
        if word.field != "status":
            return 0
        hop = min(node, neighbour)
        up = not self.down >> hop & 1
        return (int(up) | int(up) << 1 | int(up) << 2 | neighbour << 8 | int(up) << 16
                | node << 24)

    def write(self, node, addr, word):
        if node == P.CONTROL_NODE:
            if self.pending:
                access = self.spec.access(node, addr)
                if not access.exists or not access.writable:
                    return False
                if addr == _CONTROL and word & P.CONTROL_START:
                    return False          # an update runs
            if addr == _CONTROL and word & P.CONTROL_START and self.down:
                self.pending = True
                if word & P.CONTROL_CLEAR:
                    self.control["OVERFLOW_STICKY"] = 0
                return True
            return super().write(node, addr, word)
        if not self._reachable(node) or self.pending:
            return False
        return super().write(node, addr, word)
