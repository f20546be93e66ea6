"""The joint ports' status through the host: :class:`linkdyn.host.Board`'s controller methods and
``linkdyn control status`` / ``clear`` against the software board with controllers (the
protocol's ReferenceEngine on ControlledChainModel), whose joints get joint ports
(:class:`~linkdyn.model.protocol.JointPortModel`) fed with good and bad frames. Reference: the
model's own ``joint_port`` words read directly on its register bus, and the counts and latches
written out by hand from docs/controller.md ("Joint port"); a board without joint ports reads
the documented "none" (``present`` False, no fault, no count)."""

import pytest

from linkdyn.host import Board
from linkdyn.host.board_controller import (JOINT_PORT_FAULT, NO_JOINT_PORT,
                                           JointControllerState)
from linkdyn.host.cli import main
from linkdyn.model import protocol as P

from support.controlled_host import ControlledReferenceSerial, ReferencePty

N = 3
JOINT_PORT = P.controller_word("joint_port").address


def _board(port):
    return Board(port, timeout=0.2, settle=0.0)


def _frames(port, pattern):
    """Feed a joint port the frames of ``pattern`` ("g" good, "b" bad)."""
    for frame in pattern:
        port.frame(frame == "g")


def _direct(model, joint):
    """The model's word, read on its register bus (not through the engine and the host)."""
    ok, word = model.read(joint, JOINT_PORT)
    assert ok
    return P.JointPortStatus.from_word(word)


def test_a_board_without_joint_ports_reads_none_for_every_joint():
    board = _board(ControlledReferenceSerial(N))
    state = board.read_controller_state()
    assert state.joint_ports == (NO_JOINT_PORT,) * N
    assert NO_JOINT_PORT == P.JointPortStatus(present=False, fault=False, valid=False, errors=0)
    assert board.read_joint_ports() == (NO_JOINT_PORT,) * N
    assert state.faulted == [] and all(j.faults == [] and j.fault is None for j in state.joints)


def test_state_shows_each_joint_ports_count_and_fault_and_the_clears_clear_the_fault():
    line = ControlledReferenceSerial(N)
    model = line.target
    board = _board(line)
    ports = {0: model.attach_joint_port(0), 2: model.attach_joint_port(2)}
    _frames(ports[0], "gbbb")              # three bad frames in a row: the fault
    _frames(ports[2], "gbgb")              # never three in a row: counted only
    state = board.read_controller_state()
    assert state.joint_ports == (P.JointPortStatus(True, True, False, 3), NO_JOINT_PORT,
                                 P.JointPortStatus(True, False, True, 2))
    assert state.joint_ports == tuple(_direct(model, j) for j in range(N))
    assert board.read_joint_ports() == state.joint_ports
    # The port's fault is the joint's fault, beside the controller's (FAULTS is the
    # controllers' latches: none here).
    joint = state.joints[0]
    assert joint.faulted and joint.fault == JOINT_PORT_FAULT and joint.faults == ["joint_port"]
    assert joint.fault_code == 0 and state.faults == 0
    assert state.faulted == [0]
    assert not state.joints[2].faulted
    # Joint 2's own clear: its port's valid falls, its count stays; joint 0 still faulted.
    assert board.clear_faults(2) == 0
    assert board.read_joint_ports()[2] == P.JointPortStatus(True, False, False, 2)
    assert board.read_joint_ports()[0].fault
    # The clear of every joint (CONTROL.fault_clear) clears joint 0's port.
    board.clear_faults()
    after = board.read_controller_state()
    assert after.joint_ports == tuple(_direct(model, j) for j in range(N))
    assert after.joint_ports[0] == P.JointPortStatus(True, False, False, 3)
    assert after.faulted == []
    _frames(ports[0], "g")                 # the next good frame: valid again (drive enabled)
    assert board.read_joint_ports()[0] == P.JointPortStatus(True, False, True, 3)


def test_a_joint_with_both_faults_names_the_controllers_cause_first():
    port_fault = P.JointPortStatus(True, True, False, 5)
    joint = JointControllerState(1, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, fault_code=2, fault_cause=2,
                                 mode=0, joint_port=port_fault)
    assert joint.fault == "velocity" and joint.faults == ["velocity", "joint_port"]
    assert joint.faulted


@pytest.fixture
def pty_board():
    line = ControlledReferenceSerial(N)
    with ReferencePty(line) as pty:
        yield line.target, ["control", "--port", pty.port, "--timeout", "5"]


def _row(out, joint):
    return next(line for line in out.splitlines() if line.split()[:1] == [str(joint)])


def test_control_status_prints_the_joint_ports_and_clear_clears_them(pty_board, capsys):
    model, argv = pty_board
    assert main(argv + ["status"]) == 0
    out = capsys.readouterr().out
    assert "joint ports: none in this build" in out and "joint port" not in out.splitlines()[1]
    port = model.attach_joint_port(1)
    _frames(port, "gbbbb")
    model.attach_joint_port(2)
    assert main(argv + ["status"]) == 0
    out = capsys.readouterr().out
    assert "joint port" in out.splitlines()[1]
    assert "fault, 4 bad frames" in _row(out, 2) and _row(out, 2).endswith(" joint_port")
    assert "no frame yet, 0 bad frames" in _row(out, 3) and _row(out, 3).endswith(" -")
    assert " none " in _row(out, 1)
    assert "faulted joints: 2" in out
    assert main(argv + ["clear", "--joint", "2"]) == 0
    assert "cleared the faults of joint 2; no latched faults" in capsys.readouterr().out
    _frames(port, "g")
    assert main(argv + ["status"]) == 0
    out = capsys.readouterr().out
    assert "ok, 4 bad frames" in _row(out, 2) and "no latched faults" in out
    # A port that faults again before the clear is read back is reported still latched.
    _frames(port, "bbb")
    original = port.clear
    port.clear = lambda: (original(), _frames(port, "bbb"))
    assert main(argv + ["clear"]) == 0
    assert "still latched: joints 2" in capsys.readouterr().out
