"""Board top-levels: the board-independent core (:mod:`.core`) on real boards.

=============  ===============  ============  =====  ====  =================  =============
``--board``    board            device        nodes  max   clock              UART
=============  ===============  ============  =====  ====  =================  =============
``ulx3s``      ULX3S 85F        LFE5U-85F-6   6      23    25 MHz -> PLL 100  FT231X USB
``atlys``      Digilent Atlys   XC6SLX45-3    6      14    100 MHz            XR21V1410 USB
``mimas``      Numato Mimas     XC6SLX9-2     2      2     100 MHz            header P1
``sk_xc6slx9`` SK-XC6SLX9       XC6SLX9-2     2      2     50 MHz             header X7
=============  ===============  ============  =====  ====  =================  =============

:data:`BOARDS` maps the name to the top-level class (a :class:`~.common.BoardTop`: device,
default and largest node count, clock, platform); :data:`BOARD_IDS` gives the identifier the
protocol's build info reports (``BOARD_ID``, :mod:`linkdyn.model.protocol`). Builds:
``python -m linkdyn.boards.build``; programming: ``python -m linkdyn.boards.program``.
"""

__all__ = ["BOARD_IDS", "BOARDS", "board"]

#: Board identifier per board (bits 0 .. 15 of the build info's ``BOARD_ID``; bits 16 .. 23 carry
#: the chain's register banks, :mod:`linkdyn.model.board_id`); 0 is a simulation or an unnamed
#: build.
BOARD_IDS = {
    "simulation": 0,
    "ulx3s": 1,
    "atlys": 2,
    "mimas": 3,
    "sk_xc6slx9": 4,
}


from .atlys import AtlysTop  # noqa: E402  (after BOARD_IDS, which the tops read)
from .mimas import MimasTop  # noqa: E402
from .sk_xc6slx9 import SK_XC6SLX9Top  # noqa: E402
from .ulx3s import ULX3STop  # noqa: E402

#: Board name -> top-level class (a :class:`~.common.BoardTop` subclass).
BOARDS = {top.name: top for top in (ULX3STop, AtlysTop, MimasTop, SK_XC6SLX9Top)}


def board(name):
    """Return the top-level class of a board.

    Parameters
    ----------
    name : str
        A key of :data:`BOARDS`.

    Raises
    ------
    ValueError
        If the board is unknown (the message lists the known ones).
    """
    try:
        return BOARDS[name]
    except (KeyError, TypeError):
        raise ValueError(f"Board must be one of {', '.join(BOARDS)}, not {name!r}") from None
