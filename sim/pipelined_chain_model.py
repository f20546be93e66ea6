"""The pipelined chain in Python behind the register bus: :class:`PipelinedChainModel`, a
register target with the bus semantics of ``LinkDynChain(n, policy="pipelined")``
(``docs/chain.md``, *The register bus*) for the
:class:`~linkdyn.model.protocol.ReferenceEngine`: the software board of a pipelined build."""

from __future__ import annotations

from linkdyn.model import protocol as P

from .chain_model import ChainModel

__all__ = ["PipelinedChainModel"]

_MASK = 0xFFFFFFFF
_CONTROL = P.control_register("CONTROL").address
_OVERFLOW = P.control_register("OVERFLOW").address


class PipelinedChainModel(ChainModel):
    """A pipelined chain of ``spec.banks`` register banks behind the register bus, in Python.

    Every update computes the golden model's words (:class:`ChainModel`: the microprogram,
    word for word) and ends at once, which a pipelined chain may do (its updates finish in start
    order; nothing in its bus contract says when). What the pipelined policy adds to the
    sequential chain's bus, as ``docs/chain.md`` defines it:

    - input writes (``q .. mu_ext_z``) go into the bank of the next sample (sample k uses bank
      ``k mod banks``); an update takes its bank's inputs, so a STEP without wrench words uses
      the wrench last written into *its* bank;
    - RESULT_SELECT takes the number v of any of the last ``2 * banks`` updates (``0 < v <=
      UPDATE_COUNT``, ``v > UPDATE_COUNT - 2 * banks``), or ``follow``; while v is selected,
      ``tau`` of every node, node 0's base wrench (``f_out, mu_out``) and OVERFLOW read v's
      words.

    Not modelled (no command of the protocol engine depends on them): reads of the other
    banked node registers show the last update's words whatever is selected, and reads of the
    input registers the words of the last update.

    Parameters
    ----------
    spec : ProtocolSpec
        With ``banks`` 2 or 4.

    Raises
    ------
    ValueError
        If ``spec.banks`` is 1 (a sequential chain: use :class:`ChainModel`).
    """

    def __init__(self, spec):
        if spec.banks < 2:
            raise ValueError(f"PipelinedChainModel needs a ProtocolSpec with 2 or 4 banks, not "
                             f"{spec.banks}")
        super().__init__(spec)
        self.banks = spec.banks
        self.kept = 2 * spec.banks
        self._inputs = range(spec.input_address, spec.input_address + spec.input_count)
        self._bank_inputs = [[[0] * spec.input_count for _ in range(spec.n_nodes)]
                             for _ in range(self.banks)]
        rmap = spec.registers
        self._base_wrench = [rmap[source].address for source, _ in self._backward]
        self._results = {}          # update number -> (tau words, base wrench words, OVERFLOW)

    @property
    def next_bank(self):
        """int: the bank the next sample's inputs go into (and its update uses)."""
        return self.updates % self.banks

    def _selected(self):
        word = self.control["RESULT_SELECT"]
        return None if word & P.RESULT_FOLLOW else self._results[word]

    def read(self, node, addr):
        selected = self._selected()
        if selected is not None:
            tau, wrench, overflow = selected
            if node == P.CONTROL_NODE and addr == _OVERFLOW:
                return True, overflow
            if 0 <= node < self.spec.n_nodes and addr == self.spec.tau_address:
                return True, tau[node]
            if node == 0 and addr in self._base_wrench:
                return True, wrench[self._base_wrench.index(addr)]
        return super().read(node, addr)

    def write(self, node, addr, word):
        access = self.spec.access(node, addr)
        if not access.exists or not access.writable or access.owner == "engine":
            return False
        if node != P.CONTROL_NODE and addr in self._inputs:
            self._bank_inputs[self.next_bank][node][addr - self.spec.input_address] = \
                word & _MASK
            return True
        if node == P.CONTROL_NODE and addr == P.RESULT_SELECT:
            return self._select(word)
        if node == P.CONTROL_NODE and addr == _CONTROL and word & P.CONTROL_START:
            for i, words in enumerate(self._bank_inputs[self.next_bank]):
                self.memory[i][self._inputs.start:self._inputs.stop] = list(words)
        ok = super().write(node, addr, word)
        if node == P.CONTROL_NODE and addr == _CONTROL and word & P.CONTROL_START:
            count = self.control["UPDATE_COUNT"]
            self._results[count] = (
                [self.memory[i][self.spec.tau_address] for i in range(self.spec.n_nodes)],
                [self.memory[0][a] for a in self._base_wrench], self.control["OVERFLOW"])
            self._results.pop((count - self.kept) & _MASK, None)
        return ok

    def _select(self, word):
        number = word & (P.RESULT_FOLLOW - 1)
        if word & P.RESULT_FOLLOW:
            self.control["RESULT_SELECT"] = P.RESULT_FOLLOW
        elif number != 0 and number in self._results:
            self.control["RESULT_SELECT"] = number
        else:
            return False
        return True
