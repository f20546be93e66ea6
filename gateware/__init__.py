"""Amaranth gateware of the LinkDyn node (docs/architecture.md, *Gateware blocks*).

- :class:`MultiplyAccumulate` — the shared fixed-point multiply-accumulate unit (:mod:`.mac`);
- :class:`SineCosineLookup` — the quarter-wave sine table with interpolation operands
  (:mod:`.sincos`);
- :class:`CordicArctangent` — the friction arctangent (:mod:`.cordic`);
- :class:`LinkDynNode` — one node: register file, schedule ROM, sequencer (:mod:`.node`);
- :class:`Mailbox` — a neighbour mailbox, one per hop and direction (:mod:`.mailbox`);
- :class:`LinkDynChain` — n nodes over mailboxes behind the host's register bus (:mod:`.chain`).

Every block is bit-exact with the fixed-point golden model (:mod:`linkdyn.model.golden`).
"""

from .cordic import CordicArctangent
from .mac import MultiplyAccumulate
from .node import LinkDynNode
from .sincos import SineCosineLookup
from .mailbox import Mailbox
from .chain import LinkDynChain

__all__ = ["MultiplyAccumulate", "SineCosineLookup", "CordicArctangent", "LinkDynNode",
           "Mailbox", "LinkDynChain"]
