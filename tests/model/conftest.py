"""Fixtures of the model tests."""

import pytest

from support.robots import accuracy_robots


@pytest.fixture(scope="session")
def robots():
    """The accuracy report's robots, loaded once (``support.robots.accuracy_robots``)."""
    return accuracy_robots()
