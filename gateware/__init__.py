"""Amaranth gateware of the LinkDyn node (DESIGN.md Sect. 5).

- :class:`MultiplyAccumulate` — the shared fixed-point multiply-accumulate unit (:mod:`.mac`);
- :class:`SineCosineLookup` — the quarter-wave sine table with interpolation operands
  (:mod:`.sincos`);
- :class:`CordicArctangent` — the friction arctangent (:mod:`.cordic`);
- :class:`LinkDynNode` — one node: register file, schedule ROM, sequencer (:mod:`.node`).

Every block is bit-exact with the fixed-point golden model (:mod:`linkdyn.model.golden`).
"""

from .cordic import CordicArctangent
from .mac import MultiplyAccumulate
from .node import LinkDynNode
from .sincos import SineCosineLookup

__all__ = ["MultiplyAccumulate", "SineCosineLookup", "CordicArctangent", "LinkDynNode"]
