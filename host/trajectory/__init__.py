"""Trajectories and Cartesian control (paper Sect. 4.4; seeds 001, 002)."""
