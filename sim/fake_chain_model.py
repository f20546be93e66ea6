"""The fake chain in Python: :class:`FakeChainModel`, the register target that predicts
:class:`linkdyn.gateware.fake_chain.FakeChain` exactly, for the protocol's reference engine
(:class:`~linkdyn.model.protocol.ReferenceEngine`) in host-link tests."""

from ..gateware.fake_chain import NODE_STRIDE, summed_addresses
from ..model.fixedpoint import signed_word
from ..model.protocol import (
    CONTROL_CLEAR, CONTROL_NODE, CONTROL_REGISTERS, CONTROL_START, RESULT_FOLLOW, RESULT_SELECT,
    STATUS_DONE, STATUS_OVERFLOW, RegisterTarget,
)

__all__ = ["FakeChainModel"]


class FakeChainModel(RegisterTarget):
    """:class:`~linkdyn.gateware.fake_chain.FakeChain` in Python: the target of a :class:`ReferenceEngine` in tests.

    An update completes at once (STATUS reads done immediately); INTERVAL_CYCLES, which
    depends on the gateware's timing, reads 0.

    Parameters
    ----------
    spec : ProtocolSpec
    latency : int
        Value of LATENCY_CYCLES after an update (the gateware's ``latency``).
    """

    def __init__(self, spec, latency):
        self.spec = spec
        self.latency = latency
        self.memory = [[0] * NODE_STRIDE for _ in range(spec.n_nodes)]
        self.control = {reg.name: 0 for reg in spec.control_registers if reg.owner == "chain"}
        self.control["RESULT_SELECT"] = RESULT_FOLLOW
        self._summed = summed_addresses(spec)

    def _status(self):
        return ((STATUS_DONE if self.control["STATUS"] else 0)
                | (STATUS_OVERFLOW if self.control["OVERFLOW_STICKY"] else 0))

    def read(self, node, addr):
        access = self.spec.access(node, addr)
        if not access.exists or access.owner == "engine":
            return False, 0
        if node == CONTROL_NODE:
            name = next(r.name for r in CONTROL_REGISTERS if r.address == addr)
            if name == "STATUS":
                return True, self._status()
            if name == "CONTROL":
                return True, 0
            return True, self.control[name]
        return True, self.memory[node][addr]

    def write(self, node, addr, word):
        access = self.spec.access(node, addr)
        if not access.exists or not access.writable or access.owner == "engine":
            return False
        if node != CONTROL_NODE:
            self.memory[node][addr] = word
            return True
        if addr == RESULT_SELECT:
            return self._select(word)
        if word & CONTROL_CLEAR:
            self.control["OVERFLOW_STICKY"] = 0
        if word & CONTROL_START:
            self._update()
        return True

    def _select(self, word):
        # As the sequential chain: `follow`, or the number of the last update (the only one
        # kept); a selected number reads back as written, `follow` as RESULT_FOLLOW alone.
        number = word & (RESULT_FOLLOW - 1)
        if word & RESULT_FOLLOW:
            self.control["RESULT_SELECT"] = RESULT_FOLLOW
        elif number != 0 and number == self.control["UPDATE_COUNT"]:
            self.control["RESULT_SELECT"] = number
        else:
            return False
        return True

    def _update(self):
        overflow = 0
        for i in range(self.spec.n_nodes):
            total = sum(signed_word(self.memory[i][a]) for a in self._summed)
            if not -(1 << 31) <= total < (1 << 31):
                overflow |= 1 << i
                total = max(-(1 << 31), min((1 << 31) - 1, total))
            self.memory[i][self.spec.tau_address] = total & 0xFFFFFFFF
        c = self.control
        c["STATUS"] = 1   # done
        c["OVERFLOW"] = overflow
        c["OVERFLOW_STICKY"] |= overflow
        c["LATENCY_CYCLES"] = self.latency
        c["UPDATE_COUNT"] = (c["UPDATE_COUNT"] + 1) & 0xFFFFFFFF
