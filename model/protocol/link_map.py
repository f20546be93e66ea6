"""The neighbour links in the protocol: each board's link window and how its words decode.

A distributed chain (one node per board, joined by neighbour links: ``docs/distributed.md``;
:class:`~linkdyn.model.protocol.ProtocolSpec` with ``boards=n``) adds to the register map:

- in the control block, LINK_DOWN (``0x34``, answered by the chain: bit h, the link from board h
  to board h+1 is down, as board h sees it) and BOARDS (``0x35``, answered by the engine: the
  number of boards);
- on every node k (board k) the read-only link window from :data:`LINK_WINDOW` (``0xE0``):
  ``LINK_WINDOW + 8 * port + field``, port 0 the upstream link (towards board 0), port 1 the
  downstream one, the fields of :data:`LINK_FIELDS`; a port a board does not have (board 0's
  upstream, the last board's downstream) reads 0.

The gateware that answers these words is :class:`linkdyn.gateware.actuator.ActuatorCore`
(its ``LINK_WINDOW``, ``LINK_WINDOW_FIELDS`` and ``LINK_DOWN`` equal the ones here: a test
checks it); the link's counters are those of :class:`linkdyn.gateware.link.NeighbourLink`
(``docs/link.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "LINK_WINDOW", "LINK_PORTS", "LINK_FIELDS", "LINK_COUNTERS", "LinkWord", "LINK_WORDS_MAP",
    "link_word_address", "LinkState", "decode_link_status",
]

#: First node address of the link window.
LINK_WINDOW = 0xE0
#: The ports of the window, in order: 0 the upstream link, 1 the downstream one.
LINK_PORTS = ("upstream", "downstream")
#: The fields of one port, in address order (``LINK_WINDOW + 8 * port + index``).
LINK_FIELDS = ("status", "frames_sent", "frames_received", "crc_errors", "retransmissions",
               "link_drops")
#: The counter fields (32-bit, wrapping, since the board's reset).
LINK_COUNTERS = LINK_FIELDS[1:]

_FIELD_DOCS = {
    "status": "up (bit 0) | hears (bit 1) | aligned (bit 2) | neighbour's board index (bits "
              "8 .. 15) | neighbour index valid (bit 16) | this board's index (bits 24 .. 31)",
    "frames_sent": "words and slot acknowledges sent (a burst frame counts each of its "
                   "words), repeats included",
    "frames_received": "words and slot acknowledges delivered (each once; a burst frame "
                       "counts each of its words)",
    "crc_errors": "frames dropped: wrong CRC-16, an 8b/10b code or disparity error, cut short",
    "retransmissions": "words and slot acknowledges sent again (go-back-N after a NAK, a "
                       "timeout, a link-up)",
    "link_drops": "times the link went from up to down",
}


@dataclass(frozen=True)
class LinkWord:
    """One word of a node's link window.

    Attributes
    ----------
    name : str
        ``"<port>_<field>"``, e.g. ``"downstream_crc_errors"``.
    address : int
        Node address.
    port : str
        ``"upstream"`` or ``"downstream"``.
    field : str
        One of :data:`LINK_FIELDS`.
    doc : str
        Meaning.
    """

    name: str
    address: int
    port: str
    field: str
    doc: str


def link_word_address(port, field):
    """Return the node address of ``field`` of ``port`` in the link window.

    Parameters
    ----------
    port : str or int
        ``"upstream"`` / 0 or ``"downstream"`` / 1.
    field : str
        One of :data:`LINK_FIELDS`.

    Raises
    ------
    ValueError
        If the port or the field does not exist.
    """
    if isinstance(port, str):
        if port not in LINK_PORTS:
            raise ValueError(f"Link port must be one of {LINK_PORTS}, not {port!r}")
        port = LINK_PORTS.index(port)
    if port not in (0, 1) or isinstance(port, bool):
        raise ValueError(f"Link port must be 0 or 1, not {port!r}")
    if field not in LINK_FIELDS:
        raise ValueError(f"Link field must be one of {LINK_FIELDS}, not {field!r}")
    return LINK_WINDOW + 8 * port + LINK_FIELDS.index(field)


#: Every word of the link window, in address order.
LINK_WORDS_MAP = tuple(
    LinkWord(f"{port}_{field}", link_word_address(port, field), port, field, _FIELD_DOCS[field])
    for port in LINK_PORTS for field in LINK_FIELDS)


@dataclass(frozen=True)
class LinkState:
    """One port of one board, decoded from its link window.

    Attributes
    ----------
    board : int
        The board the port belongs to.
    port : str
        ``"upstream"`` or ``"downstream"``.
    up, hears, aligned : bool
        The link's state (``docs/link.md``, *Training, link-up, link-down*).
    neighbour_index : int or None
        The neighbour's board index from its training frames (``None`` until one came).
    board_index : int
        The board's own index as its gateware knows it.
    frames_sent, frames_received, crc_errors, retransmissions, link_drops : int
        The counters.
    """

    board: int
    port: str
    up: bool
    hears: bool
    aligned: bool
    neighbour_index: int | None
    board_index: int
    frames_sent: int
    frames_received: int
    crc_errors: int
    retransmissions: int
    link_drops: int

    @classmethod
    def from_words(cls, board, port, words):
        """Decode the six words of one port (:data:`LINK_FIELDS` order)."""
        if len(words) != len(LINK_FIELDS):
            raise ValueError(f"A link port has {len(LINK_FIELDS)} words, not {len(words)}")
        status = decode_link_status(words[0])
        return cls(board, port, *status, *(int(w) for w in words[1:]))

    def __str__(self):
        state = "up" if self.up else ("hears" if self.hears else "down")
        return (f"board {self.board} {self.port}: {state}, {self.frames_sent} frames sent, "
                f"{self.frames_received} received, {self.crc_errors} CRC errors, "
                f"{self.retransmissions} retransmissions, {self.link_drops} link drops")


def decode_link_status(word):
    """Return ``(up, hears, aligned, neighbour_index or None, board_index)`` of a status word."""
    word = int(word)
    neighbour = (word >> 8) & 0xFF if (word >> 16) & 1 else None
    return bool(word & 1), bool(word & 2), bool(word & 4), neighbour, (word >> 24) & 0xFF
