"""The command line stops quietly when the reader of its output goes away (``| head``)."""

import os
import subprocess
import sys


def test_a_closed_pipe_ends_the_command_without_a_traceback(tmp_path):
    # certify prints its report line by line. The pipe's reader is closed before the command
    # starts, so its first write fails for certain: a reader that took a few bytes first raced
    # the command (it could print its whole 287-byte report into the pipe before the reader
    # closed, then end with 0, as it did once on a busy machine). Every write of the report is
    # inside the command, so a later one fails the same way.
    read_end, write_end = os.pipe()
    os.close(read_end)
    process = subprocess.Popen(
        [sys.executable, "-m", "linkdyn", "certify", "--robot", "ur5", "--states", "100",
         "--out", str(tmp_path / "certificate")],
        stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    status = process.wait(timeout=120)
    stderr = process.stderr.read().decode()
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert status == 141                              # 128 + SIGPIPE, as a shell reports it
