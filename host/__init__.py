"""Host side: serial client of the board, command line, identification, trajectories."""
