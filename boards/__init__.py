"""linkdyn.boards"""
