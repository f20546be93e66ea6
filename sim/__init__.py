"""linkdyn.sim"""
