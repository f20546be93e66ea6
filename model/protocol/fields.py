"""The bit field of a register word, shared by the register maps (a leaf module: the maps
import it, it imports none of them)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ControlField"]


@dataclass(frozen=True)
class ControlField:
    """One bit field of a register word (CONTROL, STATUS, SHOW_UPDATE, a controller window's
    ``joint_port``): ``width`` bits from bit ``offset``."""

    name: str
    offset: int
    width: int
    doc: str

    @property
    def mask(self):
        """int: the field's bits in the word."""
        return ((1 << self.width) - 1) << self.offset
