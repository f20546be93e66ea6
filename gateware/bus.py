"""The register bus between the host link (protocol engine) and the chain of nodes.

One transaction at a time: the initiator holds ``node``, ``addr``, ``wdata`` and ``we`` with
``valid`` asserted until the target answers with ``ready`` for one cycle; on that cycle
``rdata`` holds the word read (reads and writes both return the register's word: for a write,
the word written) and ``error`` says the access was refused (node or address out of range,
write to a read-only register, write while the chain is busy). A refused access changes nothing.

``lock`` marks a run of transactions as one command (as Wishbone's ``LOCK_O``): while it is
high, a target that starts work of its own (the joint controllers' CONTROL_PERIOD timer) waits
before it does, so that a STATUS read that found the chain idle still holds for the command's
writes. The protocol engine raises it from a state-changing command's STATUS check to its
reply; targets without work of their own ignore it.

``node`` selects a LinkDyn node (``0 .. n-1``) or, with :data:`CONTROL_NODE`, the chain's control
and status block (see :mod:`linkdyn.model.protocol` for its register map).
"""

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

# The ``node`` value that selects the chain's control and status registers, defined once by
# the protocol (re-exported here for the bus's users).
from linkdyn.model.protocol import CONTROL_NODE

__all__ = ["CONTROL_NODE", "RegisterBusSignature"]


class RegisterBusSignature(wiring.Signature):
    """Signature of the register bus, from the initiator's side.

    Members
    -------
    valid : Out(1)
        A transaction is requested; held with the other outputs until ``ready``.
    node : Out(8)
        Node index, or :data:`CONTROL_NODE`.
    addr : Out(8)
        Word address within the node's register map.
    we : Out(1)
        Write (1) or read (0).
    wdata : Out(32)
        Word to write.
    ready : In(1)
        The transaction completed this cycle.
    rdata : In(32)
        Word read (valid with ``ready``).
    error : In(1)
        The access was refused (valid with ``ready``).
    lock : Out(1)
        The transactions belong to one command: a target defers work of its own while it is
        high (it may stay high between transactions, with ``valid`` low).
    """

    def __init__(self):
        super().__init__({
            "valid": Out(1),
            "node": Out(8),
            "addr": Out(8),
            "we": Out(1),
            "wdata": Out(32),
            "ready": In(1),
            "rdata": In(32),
            "error": In(1),
            "lock": Out(1),
        })
