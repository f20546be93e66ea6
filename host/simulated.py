"""A host :class:`~linkdyn.host.Board` on a simulated board (:class:`linkdyn.sim.SimulatedBoard`).

The simulated board serves a pseudo-terminal that :meth:`Board.open` opens like any serial
port; :func:`open_simulated` adds link settings that suit the simulator's speed (the sim layer
knows nothing of the host, so this lives here)::

    from linkdyn.host.simulated import open_simulated
    from linkdyn.sim import SimulatedBoard

    with SimulatedBoard(6) as sim, open_simulated(sim) as board:
        print(board.info())

The plain ``Board.open(sim.port, sim.baudrate)`` works with either simulator too: the host's
time limits are limits on silence, and it learns the line's pace from the replies
(:class:`linkdyn.host.Board`); the settings below only make recovery from a damaged frame (the
tests' faulty lines) wait long enough for a slow simulator.
"""

from __future__ import annotations

from .board import Board

__all__ = ["open_simulated", "link_settings"]

#: ``(timeout, settle)`` per simulator, seconds: the longest silence while a reply is awaited
#: and the idle time of the line before a resend. Icarus Verilog delivers the bytes of a
#: 6-node board in bursts up to about 0.1 s apart (wall clock), Verilator's ``-O2`` model tens of
#: times faster.
LINK_SETTINGS = {"verilator": (5.0, 0.25), "icarus": (30.0, 2.0)}


def link_settings(sim):
    """Return ``{"timeout": s, "settle": s}`` that suit the simulator of ``sim``.

    Parameters
    ----------
    sim : linkdyn.sim.SimulatedBoard
        A simulated board (its ``simulator`` is known once it is built).

    Raises
    ------
    ValueError
        If the simulator is not one of :data:`LINK_SETTINGS`.
    """
    name = getattr(sim, "simulator", None)
    if name not in LINK_SETTINGS:
        raise ValueError(f"Simulator must be one of {tuple(LINK_SETTINGS)} (a started "
                         f"SimulatedBoard), not {name!r}")
    timeout, settle = LINK_SETTINGS[name]
    return {"timeout": timeout, "settle": settle}


def open_simulated(sim, **kwargs):
    """Return a :class:`Board` connected to a running simulated board.

    Parameters
    ----------
    sim : linkdyn.sim.SimulatedBoard
        The running board.
    **kwargs
        Arguments of :meth:`Board.open`; ``baudrate`` defaults to the board's, ``timeout`` and
        ``settle`` to :func:`link_settings`.

    Raises
    ------
    BoardConnectionError
        If the simulated board is not running (no port) or the port cannot be opened.
    """
    from .board import BoardConnectionError
    if getattr(sim, "port", None) is None:
        raise BoardConnectionError("the simulated board is not running")
    kwargs.setdefault("baudrate", sim.baudrate)
    for name, value in link_settings(sim).items():
        kwargs.setdefault(name, value)
    return Board.open(sim.port, **kwargs)
