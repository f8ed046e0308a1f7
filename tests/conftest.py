import pytest

from tests.fakeapi import FakeAPIServer


@pytest.fixture
def fake():
    server = FakeAPIServer().start()
    yield server
    server.stop()
