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
default and largest node count, clock, platform, ``board_id``); :data:`BOARD_IDS` gives the
identifier the protocol's build info reports (``BOARD_ID``, :mod:`linkdyn.model.protocol`). A
board is one module of this package defining its top (registered when defined). Builds:
``python -m linkdyn.boards.build``; programming: ``python -m linkdyn.boards.program``.
"""

import importlib
import pkgutil

from .common import BOARD_TOPS

__all__ = ["BOARD_IDS", "BOARDS", "board"]

#: Modules of this package that are not boards (the core, the build and its tools).
_INFRASTRUCTURE = frozenset({"build", "common", "core", "cycles", "floorplan", "program",
                             "summary", "toolchain"})

# Every other module is a board: importing it registers its BoardTop subclass.
for _module in pkgutil.iter_modules(__path__):
    if _module.name not in _INFRASTRUCTURE and not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

#: Board name -> top-level class (a :class:`~.common.BoardTop` subclass), in ``board_id`` order.
BOARDS = dict(sorted(BOARD_TOPS.items(), key=lambda item: item[1].board_id))

#: ``BOARD_ID`` of the build info per board; 0 is a simulation or an unnamed build.
BOARD_IDS = {"simulation": 0, **{name: top.board_id for name, top in BOARDS.items()}}


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
