"""linkdyn sim-board --boards: its argument checks (the runs are in
test_sim_board_distributed.py)."""

from linkdyn.host.cli import main


def test_sim_board_boards_refuses_other_chains_and_link_options_alone(capsys):
    assert main(["sim-board", "--boards", "2", "--chain", "fake"]) == 2
    assert "--boards builds its own chain" in capsys.readouterr().err
    assert main(["sim-board", "--nodes", "2", "--link-ber", "1e-4"]) == 2
    assert "--link-bitrate and --link-ber need --boards" in capsys.readouterr().err
    assert main(["sim-board", "--nodes", "3", "--boards", "2"]) == 2
    err = capsys.readouterr().err
    assert "3 nodes need boards=3, not 2" in err and "building" not in err
