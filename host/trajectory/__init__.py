"""Trajectories and Cartesian control (paper Sect. 4.4; seeds 001, 002).

One job per module (documentation and measured figures: ``docs/trajectories.md``):

``kinematics``    forward kinematics, geometric Jacobian, ``Jdot qd``, joint-space inertia (CRBA)
``paths``         Cartesian paths sampled at the control rate: figure-eight, line, waypoints
``ik``            the IK mappings of seed 001 (``fd``, ``dls``, ``jinv``, ``jt``) and the
                  Cartesian tracking loop that turns a path into ``q, qd, qdd``
``conditioning``  seed 001's comparison of the mappings (condition numbers, singular values)
``joint_path``    geometric joint paths ``q(s)`` (quintic splines) from waypoints or samples
``timing``        time-optimal parameterisation (toppra, and an independent linear program)
``jerk``          the jerk-limited online parameterisation of seed 002, chapter 2
``export``        trajectory CSV and JSON summary
``verify``        independent limit check of a sampled trajectory (finite differences, rnea)
``plots``         PNG figures
``pipeline``      the ``eight`` and ``retime`` jobs end to end
``cli``           ``linkdyn trajectory eight|retime``
``report``        regenerates the figures and numbers of the documentation
"""
