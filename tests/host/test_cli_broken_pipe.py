"""The command line stops quietly when the reader of its output goes away (``| head``)."""

import subprocess
import sys


def test_a_closed_pipe_ends_the_command_without_a_traceback(tmp_path):
    # certify prints its report line by line; the reader takes 5 bytes and closes the pipe.
    process = subprocess.Popen(
        [sys.executable, "-m", "linkdyn", "certify", "--robot", "ur5", "--states", "100",
         "--out", str(tmp_path / "certificate")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout.read(5) == b"ur5: "
    process.stdout.close()
    status = process.wait(timeout=120)
    stderr = process.stderr.read().decode()
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert status == 141                              # 128 + SIGPIPE, as a shell reports it
