"""The host API of the joint controllers (linkdyn.host.Board's controller methods) against the
software board with controllers: the protocol's ReferenceEngine on ControlledChainModel, behind
a fake serial port (and a pseudo-terminal with a faulty line). References: the float RNEA of
the reference (sensor = reference, the model fed the reference), ControlledChainModel driven
directly through its register bus, the controller's fault table."""

import numpy as np
import pytest

from linkdyn.host import (Board, BoardProtocolError, BoardTimeoutError, NoControllersError)
from linkdyn.host.board_controller import decode_fault, fault_names
from linkdyn.model import FixedPointRangeError, load_robot, rnea
from linkdyn.model import protocol as P
from linkdyn.model.controller import FAULTS, ControllerConfig
from linkdyn.model.fixedpoint import Q15_16
from linkdyn.model.golden import encode_base_motion, encode_robot
from linkdyn.sim.controlled_chain_model import ControlledChainModel

from support.controlled_host import (ControlledReferenceSerial, FirstOrderJoints, ReferencePty,
                                     sensor_at_reference)
from support.host import FaultyLine, ReferenceSerial

ROBOT = load_robot("ur5")
N = ROBOT.n
# Q15.16 accuracy of the UR5's torques against the float RNEA (docs/accuracy.md).
ACCURACY = 2e-3


def _board(port, **kwargs):
    kwargs.setdefault("timeout", 0.2)
    kwargs.setdefault("settle", 0.0)
    return Board(port, **kwargs)


def _configs(**kwargs):
    return [ControllerConfig.for_joint(link.limits, **kwargs) for link in ROBOT.links]


def _references(count, seed, scale=1.0):
    rng = np.random.default_rng(seed)
    return tuple(rng.uniform(-scale, scale, (count, N)) for _ in range(3))


def _loaded(sensor=sensor_at_reference, configs=None):
    port = ControlledReferenceSerial(N, sensor)
    board = _board(port)
    board.load_robot(ROBOT)
    board.configure_controllers(_configs() if configs is None else configs)
    return port, board


def _direct_records(configs, q_ref, qd_ref, qdd_ref, sensor=None):
    """The records ControlledChainModel gives when driven through its register bus directly,
    with the sensor at the reference or at ``sensor`` (K, n, 2 words): (K, n, 5) signed words."""
    spec = P.ProtocolSpec(N, controllers=True)
    model = ControlledChainModel(spec)
    rmap = spec.registers
    for i, words in enumerate(encode_robot(ROBOT)):
        for name, word in words.items():
            assert model.write(i, rmap[name].address, word)
    for name, word in encode_base_motion(ROBOT).items():
        assert model.write(0, rmap[name].address, word)
    for i, config in enumerate(configs):
        for name, word in config.encode().items():
            assert model.write(i, P.controller_word(name).address, word)
    records = []
    for k in range(len(q_ref)):
        refs = [Q15_16.encode(a[k]) for a in (q_ref, qd_ref, qdd_ref)]
        for i in range(N):
            if sensor is None:
                model.set_sensor(i, refs[0][i], refs[1][i])
            else:
                model.set_sensor(i, *sensor[k, i])
            for word, ref in zip(P.REFERENCE_WORDS, refs):
                assert model.write(i, word.address, int(ref[i]))
        assert model.write(P.CONTROL_NODE, P.control_register("CONTROL").address,
                           P.CONTROL_STEP)
        records.append([[_signed(model.read(i, w.address)[1]) for w in P.RECORD_WORDS]
                        for i in range(N)])
    return np.array(records, dtype=np.int64)


def _signed(word):
    return word - (1 << 32) if word >> 31 else word


# -- capability --------------------------------------------------------------------------------

def test_info_reports_the_joint_controllers():
    with _board(ControlledReferenceSerial(N)) as board:
        info = board.info()
        assert info.controllers and board.has_controllers
        assert info.map_check == P.ProtocolSpec(N, controllers=True).map_check
        assert info.map_check != P.ProtocolSpec(N).map_check
        assert "joint controllers" in str(info)
    with _board(ReferenceSerial()) as board:
        assert not board.info().controllers and not board.has_controllers
        assert "controllers" not in str(board.info())


def test_a_board_without_controllers_refuses_every_controller_call_before_sending():
    port = ReferenceSerial()
    with _board(port) as board:
        board.info()
        sent = port.requests
        calls = [lambda: board.configure_controllers(_configs()),
                 lambda: board.control(np.zeros(N), np.zeros(N), np.zeros(N)),
                 lambda: board.hold(2), board.read_controller_state, board.clear_faults,
                 lambda: board.clear_faults(1), lambda: board.set_control_period(100),
                 lambda: board.read_controller_config(0)]
        for call in calls:
            with pytest.raises(NoControllersError, match="no joint controllers .*CONTROLLERS"):
                call()
        assert port.requests == sent, "nothing may be sent to a board without controllers"


# -- configuration -----------------------------------------------------------------------------

def test_configure_writes_every_register_and_reads_it_back():
    rng = np.random.default_rng(3)
    configs = [ControllerConfig.for_joint(link.limits, kp=rng.uniform(50, 900),
                                          kd=rng.uniform(5, 60), measured_state=bool(j % 2),
                                          tau_saturation_cycles=int(rng.integers(1, 1000)))
               for j, link in enumerate(ROBOT.links)]
    port, board = _loaded(configs=configs)
    for j, config in enumerate(configs):
        words = config.encode()
        joint = port.target.joints[j]
        for name, word in words.items():
            assert joint.read(name) == word & 0xFFFFFFFF, (j, name)
        back = board.read_controller_config(j)
        assert back.encode() == words
        assert back.kp == pytest.approx(config.kp, abs=Q15_16.resolution)
        assert back.measured_state == config.measured_state
    assert board.controller_configs == tuple(configs)
    # One joint alone.
    one = ControllerConfig.for_joint(ROBOT.links[2].limits, kp=123.0)
    board.configure_controller(2, one)
    assert board.read_controller_config(2).encode() == one.encode()
    assert board.read_controller_config(1).encode() == configs[1].encode()


def test_configure_reports_a_word_the_board_did_not_keep():
    port = ControlledReferenceSerial(N, sensor_at_reference)
    board = _board(port)
    original = port.target.write
    kd = P.controller_word("kd").address
    port.target.write = lambda node, addr, word: original(node, addr, 0 if (node, addr) == (
        2, kd) else word)
    with pytest.raises(BoardProtocolError, match="joint 3 controller kd: wrote 0x00280000, "
                                                 "read back 0x00000000"):
        board.configure_controllers(_configs())
    with pytest.raises(BoardProtocolError, match="joint 3 controller kd"):
        board.configure_controller(2, _configs()[2])


def test_a_gain_that_does_not_fit_raises_naming_joint_and_register_and_writes_nothing():
    port, board = _loaded()
    before = [board.read_controller_config(j).encode() for j in range(N)]
    sent = port.requests
    bad = _configs()
    bad[3] = ControllerConfig.for_joint(ROBOT.links[3].limits, kp=1e5)
    with pytest.raises(FixedPointRangeError,
                       match=r"joint 4: controller kp \(1/s\^2\) = 100000.0 does not fit "
                             r"Q15.16") as caught:
        board.configure_controllers(bad)
    assert (caught.value.joint, caught.value.register) == (3, "kp")
    assert port.requests == sent, "nothing may be written when a value does not fit"
    assert [board.read_controller_config(j).encode() for j in range(N)] == before
    # A fine-format register (Q3.28, |x| < 8), a negative limit, a count that is no integer.
    for field, value, error, text in (
            ("current_per_torque", 9.0, FixedPointRangeError, "current_per_torque .* Q3.28"),
            ("tau_max", -1.0, ValueError, r"tau_max \(N m\) must be >= 0"),
            ("watchdog_cycles", 2.5, ValueError, "watchdog_cycles .* integer")):
        bad = _configs()
        bad[5] = ControllerConfig.for_joint(ROBOT.links[5].limits, **{field: value})
        with pytest.raises(error, match=f"joint 6: controller {text}") as caught:
            board.configure_controllers(bad)
        assert caught.value.register == field
    assert port.requests == sent + N * 2
    with pytest.raises(ValueError, match="6 joints, 5 configurations"):
        board.configure_controllers(_configs()[:5])
    with pytest.raises(TypeError, match="joint 2: the configuration must be a ControllerConfig"):
        board.configure_controllers([_configs()[0], {"kp": 1.0}] + _configs()[2:])


def test_set_control_period_in_cycles_and_seconds():
    port, board = _loaded()
    assert board.set_control_period(seconds=1e-3) == 12_000      # 12 MHz clock
    assert port.target.control_period == 12_000
    assert board.read_controller_state().control_period == 12_000
    assert board.set_control_period(0) == 0
    for kwargs, error, text in (({}, TypeError, "cycles or seconds"),
                                ({"cycles": 1, "seconds": 1.0}, TypeError, "one of them"),
                                ({"cycles": -1}, ValueError, "0 .. 2\\*\\*32-1"),
                                ({"cycles": 1.5}, TypeError, "integer number of cycles"),
                                ({"seconds": 1e-9}, ValueError, "shorter than one cycle"),
                                ({"seconds": -1.0}, ValueError, "non-negative")):
        with pytest.raises(error, match=text):
            board.set_control_period(**kwargs)


# -- control steps -----------------------------------------------------------------------------

def test_commanded_torque_is_the_float_rnea_of_the_reference_and_the_model_words():
    """Sensor = reference, the model fed the reference: the feedback and guard errors are zero,
    so the commanded torque is the inverse dynamics of the reference: the float RNEA within the
    Q15.16 accuracy, and ControlledChainModel's words exactly."""
    configs = _configs()
    port, board = _loaded(configs=configs)
    q, qd, qdd = _references(12, seed=7)
    result = board.control(q, qd, qdd)
    tau = rnea(ROBOT, q, qd, qdd)
    assert np.all(np.abs(tau) < [c.tau_max for c in configs]), "states within the torque limits"
    assert result.tau_cmd.shape == (12, N)
    np.testing.assert_allclose(result.tau_cmd, tau, rtol=0, atol=ACCURACY)
    direct = _direct_records(configs, q, qd, qdd)
    np.testing.assert_array_equal(result.words, direct)
    np.testing.assert_array_equal(result.tau_cmd, Q15_16.decode(direct[:, :, 0]))
    # The current is the torque times 1 / (k_t N) (0.1 A/(N m)), the measured state the
    # reference's words; no fault, no saturation, one chain update per step.
    np.testing.assert_allclose(result.i_ref, 0.1 * result.tau_cmd, atol=2 * Q15_16.resolution)
    np.testing.assert_array_equal(result.q, Q15_16.decode(Q15_16.encode(q)))
    np.testing.assert_array_equal(result.qd, Q15_16.decode(Q15_16.encode(qd)))
    assert not result.faulted.any() and result.fault_names() == {}
    assert not result.overflow.any()
    assert result.steps == 12 and result.retries == 0
    assert np.all(np.diff(result.update_count) == 1)
    assert port.controls == 12
    # One step: shapes (n,); the same words as the stream's first step on a fresh board.
    port2, board2 = _loaded(configs=configs)
    single = board2.control(q[0], qd[0], qdd[0])
    assert single.tau_cmd.shape == (N,) and single.update_count.shape == ()
    np.testing.assert_array_equal(single.words, direct[0])
    state = board.read_controller_state()
    np.testing.assert_array_equal(state.tau_cmd, result.tau_cmd[-1])
    assert [j.sensor_q for j in state.joints] == list(result.q[-1])
    assert [j.qd for j in state.joints] == list(result.qd[-1])
    assert [j.i_ref for j in state.joints] == list(result.i_ref[-1])
    assert all(j.mode_bits() == ["drive_enable"] and j.fault is None for j in state.joints)
    assert state.control_steps == 12 and state.faults == 0


def test_measured_state_feedback_with_a_lagging_joint():
    """A joint that follows its reference with a first-order lag: the records carry the
    lagging sensor samples (the plant's own numbers), and with the measured state fed to the
    model the commanded torque equals ControlledChainModel's for those samples."""
    configs = _configs(measured_state=True, kp=100.0, kd=20.0)
    plant = FirstOrderJoints(N, dt=1e-3, time_constant=0.01)
    port, board = _loaded(sensor=plant, configs=configs)
    k = np.arange(1, 11)[:, None]
    q_ref = np.broadcast_to(0.02 * np.ones(N), (10, N))       # a step of 0.02 rad
    zero = np.zeros((10, N))
    result = board.control(q_ref, zero, zero, window=1)
    # The plant: q_k = 0.02 (1 - 0.9^k) (dt / T = 0.1), qd its difference quotient.
    q_expected = 0.02 * (1 - 0.9 ** k) * np.ones(N)
    np.testing.assert_allclose(result.q, q_expected, atol=Q15_16.resolution)
    np.testing.assert_allclose(result.qd[:, 0], np.diff(q_expected[:, 0], prepend=0.0) / 1e-3,
                               atol=1e-3)
    assert not result.faulted.any()
    sensor = result.words[:, :, 3:5]
    np.testing.assert_array_equal(result.words,
                                  _direct_records(configs, q_ref, zero, zero, sensor))
    # The feedback acts: the commanded torque is not the gravity torque at the sample.
    gravity = rnea(ROBOT, result.q, np.zeros_like(result.q), np.zeros_like(result.q))
    assert np.abs(result.tau_cmd - gravity)[:, :3].max() > 0.1


def test_streaming_equals_one_frame_at_a_time():
    q, qd, qdd = _references(8, seed=11)
    _, streamed = _loaded()
    _, paced = _loaded()
    a = streamed.control(q, qd, qdd)
    b = paced.control(q, qd, qdd, window=1)
    assert streamed.control_window() > 1
    np.testing.assert_array_equal(a.words, b.words)


def test_a_speed_fault_is_reported_with_its_cause_persists_and_clears():
    port, board = _loaded()
    q, qd, qdd = _references(6, seed=4, scale=0.5)
    qd[2, 1] = 5.0            # beyond joint 2's qd_hard_max (1.1 * pi rad/s) at step 3
    result = board.control(q, qd, qdd)
    code, cause = result.fault_code[:, 1], result.fault_cause[:, 1]
    assert list(code) == [0, 0, 2, 2, 2, 2], "latched at step 3 and kept"
    assert list(cause) == [0, 0, 0b10, 0b10, 0b10, 0b10], "the cause mask: bit code - 1"
    assert FAULTS[2][0] == "velocity"
    assert result.fault_names(2) == {1: ["velocity"]} == result.fault_names()
    assert result.fault_names(1) == {}
    assert np.all(result.i_ref[2:, 1] == 0), "a faulted joint drives zero current"
    assert np.all(result.i_ref[2:, 0] != 0), "the other joints keep running"
    assert not result.faulted[:, [0, 2, 3, 4, 5]].any()
    state = board.read_controller_state()
    assert state.faults == 0b10 and state.faulted == [1]
    assert state.joints[1].fault == "velocity" and state.joints[1].faults == ["velocity"]
    assert state.joints[0].fault is None and state.joints[0].faults == []
    assert decode_fault(port.target.joints[1].read("fault")) == (2, 0b10)
    # The fault persists over steps within range until it is cleared; then the joint runs.
    again = board.control(q[:2], qd[:2], qdd[:2])
    assert list(again.fault_code[:, 1]) == [2, 2]
    assert board.clear_faults(1) == 0
    assert board.read_controller_state().faults == 0
    after = board.control(q[:2], qd[:2], qdd[:2])
    assert not after.faulted.any() and np.all(after.i_ref[:, 1] != 0)
    # Clearing every joint at once (CONTROL.fault_clear), and a fault on two joints.
    qd[0, [0, 4]] = -6.0
    both = board.control(q[:1], qd[:1], qdd[:1])
    assert both.fault_names(0) == {0: ["velocity"], 4: ["velocity"]}
    assert board.clear_faults() == 0
    with pytest.raises(ValueError, match="joint must be 0 .. 5"):
        board.clear_faults(6)


def test_position_and_torque_saturation_faults_name_their_causes():
    configs = _configs()
    configs[0] = ControllerConfig.for_joint(ROBOT.links[0].limits, q_hard_max=0.5)
    configs[1] = ControllerConfig.for_joint(ROBOT.links[1].limits, tau_max=1.0,
                                            tau_saturation_cycles=2)
    _, board = _loaded(configs=configs)
    q, qd, qdd = _references(4, seed=9, scale=0.3)
    q[:, 1] = 0.0               # joint 2 holds the arm: |tau| >> 1 N m, saturated every step
    q[1, 0] = 0.8               # joint 1 beyond its hard limit at step 2
    result = board.control(q, qd, qdd)
    assert list(result.fault_code[:, 0]) == [0, 1, 1, 1]
    assert list(result.fault_code[:, 1]) == [0, 0, 3, 3], "saturated for more than 2 steps"
    assert result.fault_names() == {0: ["position"], 1: ["torque_saturation"]}
    assert np.all(np.abs(result.tau_cmd[:, 1]) <= 1.0)
    assert fault_names(0b11) == ["position", "velocity"]


def test_reference_errors_name_step_joint_and_quantity_and_send_nothing():
    port, board = _loaded()
    sent = port.requests
    q, qd, qdd = _references(3, seed=1)
    qdd[2, 4] = 1e6
    with pytest.raises(FixedPointRangeError, match="state 2, joint 5: qdd_ref = 1000000.0"):
        board.control(q, qd, qdd)
    with pytest.raises(ValueError, match=r"q_ref must have shape \(6,\) or \(K, 6\)"):
        board.control(np.zeros(5), np.zeros(6), np.zeros(6))
    with pytest.raises(ValueError, match="window must be a positive integer"):
        board.control(q, qd, qdd, window=0)
    assert port.requests == sent


# -- the link ----------------------------------------------------------------------------------

def test_a_damaged_control_reply_is_resent_and_the_extra_step_reported():
    """A CONTROL whose reply was damaged ran on the board: resent, the step runs again (with
    sensor = reference the same torques) and ControlResult.steps counts it."""
    q, qd, qdd = _references(5, seed=2)
    _, clean = _loaded()
    expected = clean.control(q, qd, qdd).words
    port, board = _loaded()
    port.damage_replies = {port.replies + 2}
    result = board.control(q, qd, qdd)
    np.testing.assert_array_equal(result.words, expected)
    assert result.retries >= 1 and result.steps > 5
    assert board.statistics.damaged_bytes > 0


def test_replies_that_keep_arriving_damaged_or_stop_give_the_protocol_errors():
    port, board = _loaded()
    board.control(np.zeros(N), np.zeros(N), np.zeros(N))
    port.damage_replies = set(range(port.replies, port.replies + 100))
    with pytest.raises(BoardProtocolError, match="CONTROL failed 4 times"):
        board.control(np.zeros(N), np.zeros(N), np.zeros(N))
    port, board = _loaded()
    board.control(np.zeros(N), np.zeros(N), np.zeros(N))
    port.mute_after = port.replies
    with pytest.raises(BoardTimeoutError, match="stopped answering: CONTROL failed"):
        board.control(np.zeros(N), np.zeros(N), np.zeros(N))


def test_a_control_reply_of_the_wrong_length_is_a_protocol_error():
    port, board = _loaded()
    original = port.engine.receive

    def short(data):
        reply = original(data)
        if data[3] != P.Command.CONTROL:
            return reply
        frame = P.decode_reply(reply)
        return P.encode_reply(frame.seq, frame.command, frame.status, frame.payload[:-4])
    port.engine.receive = short
    with pytest.raises(BoardProtocolError, match="CONTROL with .* the protocol defines 140"):
        board.control(np.zeros(N), np.zeros(N), np.zeros(N))


def test_corrupt_bytes_on_a_serial_line_are_recovered_from():
    """The software board on a pseudo-terminal behind support.host.FaultyLine: a flipped bit
    in a CONTROL reply and one in a CONTROL request; the host recovers with the documented
    errors counted, and the records are the clean ones."""
    q, qd, qdd = _references(4, seed=5)
    _, clean = _loaded()
    expected = clean.control(q, qd, qdd).words
    serial = ControlledReferenceSerial(N, sensor_at_reference)
    with ReferencePty(serial) as pty, FaultyLine(pty.port) as line, \
            Board.open(line.port, timeout=0.5) as board:
        board.load_robot(ROBOT)
        board.configure_controllers(_configs())
        line.damage_reply(P.REPLY_HEADER_BYTES + 20)
        first = board.control(q[:2], qd[:2], qdd[:2])
        line.damage_request(P.REQUEST_HEADER_BYTES + 8)
        second = board.control(q[2:], qd[2:], qdd[2:])
        status = board.status()
    assert line.damaged == {"reply": 1, "request": 1}
    np.testing.assert_array_equal(np.concatenate([first.words, second.words]), expected)
    assert first.retries >= 1 and second.retries >= 1
    assert status.errors[P.ErrorCode.BAD_CRC] == 1
