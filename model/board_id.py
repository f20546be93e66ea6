"""The BOARD_ID word of the board's build information (INFO, :mod:`linkdyn.model.protocol`).

It carries two things a host needs to know about the build:

- bits 0 .. 15: the board (:data:`linkdyn.boards.BOARD_IDS`; 0 a simulation or an unnamed build);
- bits 16 .. 23: the register banks of the chain: 1 for the sequential update policy, 2 or 4
  for the pipelined one (``docs/chain.md``). A host makes the inputs of every bank known before
  it streams STEP frames without the external wrench (:class:`linkdyn.host.Board`): one STEP per
  bank. 0 there means the build does not say (a build from before this field); a host then
  assumes the most banks a chain can have (:data:`linkdyn.model.microprogram.BANKS`).

:class:`linkdyn.boards.core.BoardCore` writes the word, :meth:`linkdyn.host.Board.info` reads it.
"""

from __future__ import annotations

__all__ = ["BOARD_BITS", "BANKS_SHIFT", "board_id_word", "split_board_id"]

#: Bits of the board identifier.
BOARD_BITS = 16
#: First bit of the bank count.
BANKS_SHIFT = 16
_BANK_COUNTS = (1, 2, 4)


def board_id_word(board, banks):
    """Return the BOARD_ID word of a build.

    Parameters
    ----------
    board : int
        Board identifier, 0 .. 65535.
    banks : int
        Register banks of the chain: 1, 2 or 4.

    Raises
    ------
    ValueError
        If ``board`` or ``banks`` is out of range.
    """
    if not isinstance(board, int) or isinstance(board, bool) or \
            not 0 <= board < (1 << BOARD_BITS):
        raise ValueError(f"Board identifier must be an integer in 0..{(1 << BOARD_BITS) - 1}, "
                         f"not {board!r}")
    if banks not in _BANK_COUNTS or isinstance(banks, bool):
        raise ValueError(f"Bank count must be one of {_BANK_COUNTS}, not {banks!r}")
    return board | (banks << BANKS_SHIFT)


def split_board_id(word):
    """Return ``(board, banks)`` of a BOARD_ID word; ``banks`` is ``None`` if the build does not
    say (the field is 0) or says something no chain has.

    Parameters
    ----------
    word : int
        The unsigned 32-bit BOARD_ID word.
    """
    board = word & ((1 << BOARD_BITS) - 1)
    banks = (word >> BANKS_SHIFT) & 0xFF
    return board, (banks if banks in _BANK_COUNTS else None)
