"""The host's view of a distributed chain: its boards, their neighbour links, and the error a
host gets for a board behind a cut link.

A distributed chain (one node per board, ``docs/distributed.md``) answers the same protocol as
a single-FPGA one; its register map adds LINK_DOWN and BOARDS to the control block and a link
window to every node (:mod:`linkdyn.model.protocol.link_map`), and its MAP_CHECK covers them.
:meth:`linkdyn.host.Board.info` uses :func:`board_count` to tell the two apart and
:func:`read_links` to report every link; when an access fails with BUS_ERROR or TIMEOUT on a
distributed chain, :func:`diagnose` reads LINK_DOWN (answered by board 0 itself) and turns the
error into a :class:`LinkDownError` that names the link and the boards behind it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.protocol import (
    CONTROL_NODE, LINK_FIELDS, LINK_PORTS, ErrorCode, LinkState, ProtocolSpec,
    control_register, link_word_address,
)
from .board import BoardDeviceError, IncompatibleBoardError

__all__ = ["LinkDownError", "ChainLinks", "board_count", "read_links", "down_hops", "diagnose"]

_LINK_DOWN = control_register("LINK_DOWN").address
_BOARDS = control_register("BOARDS").address


class LinkDownError(BoardDeviceError):
    """A board of a distributed chain cannot be reached: a neighbour link on the way is down
    (a cut cable, a board without power). A :class:`~linkdyn.host.board.BoardDeviceError`
    whose ``code`` is the board's BUS_ERROR or TIMEOUT.

    Parameters
    ----------
    code : ErrorCode
        The board's answer.
    command : Command
        The request that failed.
    hops : sequence of int
        The links that are down (LINK_DOWN's bits): hop h joins board h and board h+1.
    n_boards : int
        Boards in the chain.

    Attributes
    ----------
    hops : tuple of int
    boards : tuple of int
        The boards behind the first link that is down (they hold the nodes of the same
        numbers).
    """

    def __init__(self, code, command, hops, n_boards):
        self.hops = tuple(hops)
        self.boards = tuple(range(self.hops[0] + 1, n_boards))
        links = ", ".join(f"{h} (board {h} to board {h + 1})" for h in self.hops)
        behind = (f"board {self.boards[0]}" if len(self.boards) == 1 else
                  f"boards {self.boards[0]} .. {self.boards[-1]}")
        nodes = ", ".join(map(str, self.boards))
        super().__init__(code, command,
                         f"neighbour link {links} is down: {behind} (node"
                         f"{'s' if len(self.boards) > 1 else ''} {nodes}) cannot be reached; "
                         f"the board answered {ErrorCode(code).name}. No value was returned; "
                         "the chain resumes once the link is restored")


@dataclass(frozen=True)
class ChainLinks:
    """The boards of a distributed chain and the state of their links, as read at one time.

    Attributes
    ----------
    boards : int
        Number of boards (one node each).
    link_down : int
        LINK_DOWN: bit h, the link from board h to board h+1 is down (as board h sees it).
    ports : tuple of LinkState
        Every link port that could be read, board by board (board k's upstream, then its
        downstream port; board 0 has no upstream, the last board no downstream). The ports of
        boards behind a link that is down are missing (they cannot be reached).
    """

    boards: int
    link_down: int
    ports: tuple

    @property
    def hops_down(self):
        """tuple of int: the links that are down (hop h: board h to board h+1)."""
        return tuple(h for h in range(self.boards - 1) if self.link_down >> h & 1)

    @property
    def reachable(self):
        """int: boards that can be reached (all of them while no link is down)."""
        down = self.hops_down
        return down[0] + 1 if down else self.boards

    def port(self, board, port):
        """Return the :class:`~linkdyn.model.protocol.LinkState` of ``port`` (``"upstream"``
        or ``"downstream"``) of ``board``, or ``None`` if it was not read."""
        for state in self.ports:
            if state.board == board and state.port == port:
                return state
        return None

    def __str__(self):
        lines = [f"{self.boards} boards, links down: "
                 f"{', '.join(map(str, self.hops_down)) or 'none'}"]
        lines += [f"  {state}" for state in self.ports]
        if self.reachable < self.boards:
            last = self.boards - 1
            lines.append(f"  board {last}: not reachable" if self.reachable == last
                         else f"  boards {self.reachable} .. {last}: not reachable")
        return "\n".join(lines)


def board_count(words, spec):
    """Return the spec of a board whose INFO words are ``words``, given the single-FPGA
    ``spec`` built from them: ``spec`` itself when its MAP_CHECK matches, else the
    distributed one (``boards = NODES``) when that one's matches, else ``None``."""
    if words["MAP_CHECK"] == spec.map_check:
        return spec
    try:
        distributed = ProtocolSpec(spec.n_nodes, spec.fmt, clock_hz=spec.clock_hz,
                                   baudrate=spec.baudrate, board_id=spec.board_id,
                                   banks=spec.banks, controllers=spec.controllers,
                                   boards=spec.n_nodes)
    except (TypeError, ValueError):
        return None
    return distributed if words["MAP_CHECK"] == distributed.map_check else None


def down_hops(board):
    """Return LINK_DOWN of ``board`` (a :class:`~linkdyn.host.Board` of a distributed chain)."""
    (word,) = board._read_direct(CONTROL_NODE, _LINK_DOWN, 1)
    return word


def read_links(board):
    """Read BOARDS, LINK_DOWN and the link window of every board that can be reached.

    Parameters
    ----------
    board : linkdyn.host.Board
        On a distributed chain.

    Returns
    -------
    ChainLinks

    Raises
    ------
    BoardError
        If the link to board 0 fails, or BOARDS differs from the node count.
    """
    link_down, boards = board._read_direct(CONTROL_NODE, _LINK_DOWN, 2)
    n = board._info.nodes
    if boards != n:
        raise IncompatibleBoardError(f"the board reports {boards} boards for {n} nodes")
    links = ChainLinks(boards, link_down, ())
    ports = []
    for k in range(links.reachable):
        for p, name in enumerate(LINK_PORTS):
            if (p == 0 and k == 0) or (p == 1 and k == boards - 1):
                continue
            try:
                words = board._read_direct(k, link_word_address(name, LINK_FIELDS[0]),
                                           len(LINK_FIELDS))
            except BoardDeviceError as error:
                if error.code is not ErrorCode.BUS_ERROR:
                    raise
                # A link went down after LINK_DOWN was read (it shows a cut after the
                # link's down timeout): board k is not reachable now.
                (link_down,) = board._read_direct(CONTROL_NODE, _LINK_DOWN, 1)
                return ChainLinks(boards, link_down, tuple(ports))
            ports.append(LinkState.from_words(k, name, words))
    return ChainLinks(boards, link_down, tuple(ports))


def diagnose(board, error):
    """Return the error to raise for ``error`` (a BoardDeviceError) on ``board``: a
    :class:`LinkDownError` if the board is a distributed chain, the error is BUS_ERROR or
    TIMEOUT (or BUSY: an update that waits behind the cut) and LINK_DOWN shows a link down;
    else ``error`` itself."""
    info = board._info
    if info is None or not info.spec.distributed or \
            error.code not in (ErrorCode.BUS_ERROR, ErrorCode.TIMEOUT, ErrorCode.BUSY):
        return error
    try:
        mask = down_hops(board)
    except Exception:                    # the diagnosis must not hide the error itself
        return error
    hops = [h for h in range(info.nodes - 1) if mask >> h & 1]
    if not hops:
        return error
    return LinkDownError(error.code, error.command, hops, info.nodes)
