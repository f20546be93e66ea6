"""Host side: serial client of the board, command line, identification, trajectories.

The board client (:mod:`linkdyn.host.board`)::

    from linkdyn.host import Board
    with Board.open("/dev/ttyUSB0") as board:
        tau = board.inverse_dynamics(q, qd, qdd)

and, on a board with joint controllers, runs them (:mod:`linkdyn.host.board_controller`).
"""

from .board import (
    Board, BoardConnectionError, BoardDeviceError, BoardError, BoardInfo, BoardProtocolError,
    BoardResult, BoardStatistics, BoardTimeoutError, CertificateWarning, IncompatibleBoardError,
    NoControllersError, SaturationError,
)
from .board_controller import ControllerState, ControlResult, JointControllerState
from .board_links import ChainLinks, LinkDownError

__all__ = [
    "Board", "BoardInfo", "BoardResult", "BoardStatistics", "BoardError",
    "BoardConnectionError", "BoardTimeoutError", "BoardProtocolError", "IncompatibleBoardError",
    "BoardDeviceError", "SaturationError", "CertificateWarning", "NoControllersError",
    "ControlResult", "ControllerState", "JointControllerState", "ChainLinks", "LinkDownError",
]
