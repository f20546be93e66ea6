"""linkdyn.sim: cocotb runners, and the board simulated behind a serial port.

:class:`SimulatedBoard` (:mod:`linkdyn.sim.board`) is imported lazily, so that importing the
package does not import the gateware.
"""

__all__ = ["SimulatedBoard", "SimulatedBoardError"]


def __getattr__(name):
    if name in __all__:
        from . import board
        return getattr(board, name)
    raise AttributeError(f"module 'linkdyn.sim' has no attribute {name!r}")
