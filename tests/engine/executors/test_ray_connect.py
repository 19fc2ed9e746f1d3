"""A Ray address with no cluster behind it is refused at once with one message (Ray's own client
retries for minutes), and a value that is not an address is named as such."""

from __future__ import annotations

import socket

import pytest

from touchstone.engine.executors.ray.connect import check_address
from touchstone.errors import ConfigurationError


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once the socket is closed


def test_nothing_listening_is_refused_with_one_message() -> None:
    with pytest.raises(ConfigurationError, match=r"no Ray cluster answers at 127\.0\.0\.1:"):
        check_address(f"127.0.0.1:{_closed_port()}", timeout=2)


@pytest.mark.parametrize("address", ["not an address", "127.0.0.1", "host:port", "127.0.0.1:99999"])
def test_a_value_that_is_not_an_address_is_named(address: str) -> None:
    with pytest.raises(ConfigurationError, match="is not an address"):
        check_address(address)


def test_ray_own_forms_and_a_listening_port_pass() -> None:
    for address in (None, "auto", "local", "ray://head:10001"):
        check_address(address)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_address(f"127.0.0.1:{server.getsockname()[1]}")
