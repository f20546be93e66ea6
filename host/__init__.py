"""Host side: serial client of the board, command line, identification, trajectories.

The board client (:mod:`linkdyn.host.board`)::

    from linkdyn.host import Board
    with Board.open("/dev/ttyUSB0") as board:
        tau = board.inverse_dynamics(q, qd, qdd)
"""

from .board import (
    Board, BoardConnectionError, BoardDeviceError, BoardError, BoardInfo, BoardProtocolError,
    BoardResult, BoardStatistics, BoardTimeoutError, CertificateWarning, IncompatibleBoardError,
    SaturationError,
)

__all__ = [
    "Board", "BoardInfo", "BoardResult", "BoardStatistics", "BoardError",
    "BoardConnectionError", "BoardTimeoutError", "BoardProtocolError", "IncompatibleBoardError",
    "BoardDeviceError", "SaturationError", "CertificateWarning",
]
