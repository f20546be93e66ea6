"""Progress bars written to a file or a log are a line now and then, not thousands of
carriage-return redraws (``make demo > log``); on a terminal they stay tqdm bars."""

import io
import sys

import numpy as np

from linkdyn.host import Board
from linkdyn.host import progress as progress_module
from linkdyn.host.progress import LogProgress, progress_bar
from linkdyn.model import load_robot

from support.host import ReferenceSerial


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_on_a_terminal_the_bar_is_tqdm():
    screen = Terminal()
    bar = progress_bar(100, desc="work", unit="step", file=screen, mininterval=0)
    for _ in range(100):
        bar.update(1)
    bar.close()
    assert type(bar).__name__ == "tqdm"
    assert "\r" in screen.getvalue() and "work" in screen.getvalue()


def test_in_a_log_the_bar_writes_a_line_per_interval_and_one_at_the_end(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(progress_module.time, "monotonic", lambda: clock[0])
    log = io.StringIO()
    bar = progress_bar(12_800, desc="board", unit="state", file=log)
    assert isinstance(bar, LogProgress)
    for _ in range(12_800):              # 12,800 updates over 100 s: a line every 30 s
        clock[0] += 1 / 128
        bar.update(1)
    bar.close()
    bar.close()
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue()
    assert lines == ["board: at 3840/12800 state (30 %), 30 s",
                     "board: at 7680/12800 state (60 %), 60 s",
                     "board: at 11520/12800 state (90 %), 90 s",
                     "board: done 12800/12800 state (100 %), 100 s"]


def test_short_work_in_a_log_writes_nothing_and_terminal_only_bars_none():
    log = io.StringIO()
    bar = progress_bar(50, desc="short", unit="it", file=log)
    bar.set_postfix(criterion="1.5")
    bar.update(50)
    bar.close()
    assert log.getvalue() == ""
    assert progress_bar(50, desc="x", unit="it", file=log, terminal_only=True) is None


def test_a_board_stream_with_progress_into_a_log_has_no_carriage_returns(monkeypatch):
    # The defect: Board.rnea(progress=True) (what `make demo` does) wrote tqdm's redraws into
    # the log. stderr is a file here.
    log = io.StringIO()
    monkeypatch.setattr(sys, "stderr", log)
    monkeypatch.setattr(progress_module, "LOG_INTERVAL", 0.0)      # a line per update
    rng = np.random.default_rng(1)
    q, qd, qdd = (rng.uniform(-1, 1, (40, 6)) for _ in range(3))
    with Board(ReferenceSerial(), timeout=0.2, settle=0.0) as board:
        board.load_robot(load_robot("ur5"), verify=False)
        result = board.rnea(q, qd, qdd, progress=True)
    assert result.updates == 40
    text = log.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[-1].startswith("board: done 40/40 state (100 %)")
    assert all(line.startswith("board: ") for line in lines)
