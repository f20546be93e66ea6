"""The host link protocol: the one definition shared by the gateware and the host.

The board and the host PC exchange *frames* over a serial line (8N1, default 3 Mbaud). The host
sends *requests*; the board answers every request with exactly one *reply*, in order. Everything
the two sides must agree on is defined here, as data: the frame layout, the command and error
codes, the payload layouts, the register map of the chain's control block at
:data:`CONTROL_NODE`, the access rules of the node registers
(:class:`~linkdyn.model.microprogram.RegisterMap`), the CRC, and an executable reference of the
board's protocol engine (:class:`ReferenceEngine`). The gateware (:mod:`linkdyn.gateware.protocol`)
derives its constants from this module, and ``docs/protocol.md`` is generated from it::

    python -m linkdyn.model.protocol --markdown > docs/protocol.md

Frames
------
A request is a sync byte (0xA5), version, sequence number, command, payload length, the
payload of 32-bit little-endian words and a CRC-16; a reply has the sync byte 0x5A and one more
header byte, the status (:mod:`~linkdyn.model.protocol.frames` has the byte layout).

Reception (board side): the engine hunts for the sync byte, collects the header and, if the
length fits its frame buffer, the payload and the CRC, then validates the *whole* frame (CRC,
version, command, length, node, addresses, access, busy) before it executes anything, so a
malformed frame changes no state. A gap of more than the inter-byte timeout inside a frame ends
it with a TRUNCATED error reply. After any error the engine hunts for the next sync byte; a host
that recovers from an error waits for the timeout (an idle line) before it sends again, which
always resynchronises the engine.

Modules
-------
:mod:`~linkdyn.model.protocol.frames`
    Sync bytes, headers, CRC, command and error codes, encoder and decoders of frames.
:mod:`~linkdyn.model.protocol.fields`
    The bit field of a register word (``ControlField``), shared by the maps below.
:mod:`~linkdyn.model.protocol.registers`
    The control block's register map, the node access rules, :class:`ProtocolSpec`.
:mod:`~linkdyn.model.protocol.controller_map`
    The joint controllers' words in the node address space and the control block.
:mod:`~linkdyn.model.protocol.joint_port_map`
    The joint port's status word in the controller window, its reference behaviour.
:mod:`~linkdyn.model.protocol.link_map`
    The neighbour links' words of a distributed chain (LINK_DOWN, BOARDS, the link window).
:mod:`~linkdyn.model.protocol.payloads`
    Request payload builders and reply payload decoders.
:mod:`~linkdyn.model.protocol.engine`
    :class:`ReferenceEngine`, the executable reference of the board's engine.
:mod:`~linkdyn.model.protocol.document`
    The generator of ``docs/protocol.md``.

Every public name of these modules is available from :mod:`linkdyn.model.protocol` itself.
"""

from . import (controller_map, engine, frames, joint_port_map, link_map,
               payloads, registers)
from .document import generate_markdown, main  # noqa: F401  (python -m linkdyn.model.protocol)
from .engine import *  # noqa: F401,F403  (the package re-exports every module's public names)
from .controller_map import *  # noqa: F401,F403
from .link_map import *  # noqa: F401,F403
from .joint_port_map import *  # noqa: F401,F403
from .frames import *  # noqa: F401,F403
from .payloads import *  # noqa: F401,F403
from .registers import *  # noqa: F401,F403

__all__ = [*frames.__all__, *registers.__all__, *controller_map.__all__,
           *joint_port_map.__all__, *link_map.__all__, *payloads.__all__, *engine.__all__,
           "generate_markdown"]
