"""The lab's edge: each of docker-py's errors (and requests', urllib3's, the socket's under it) becomes
one of loadcmp's, with the words a user reads. docker-py's real classes; no Docker engine needed."""

from __future__ import annotations

import inspect

import docker.errors
import docker.utils.socket
import pytest
import requests.exceptions as rq
import urllib3.exceptions as u3

from loadcmp.errors import BuildError, DockerUnavailable, LabError, NotOnEngine, UsageError
from loadcmp.lab.dockerapi import engine_error, engine_errors
from loadcmp.lab.dockerhost import answering, resolve, stopped_answering

AT = "tcp://10.0.0.5:2376"
REFUSED = rq.ConnectionError(u3.ProtocolError("Connection aborted.", ConnectionRefusedError(111, "Connection refused")))
LOST = f"the Docker engine at {AT} stopped answering"


@pytest.mark.parametrize("error, kind, message", [
    (docker.errors.NotFound("No such container: loadcmp-x-web"), NotOnEngine, "No such container: loadcmp-x-web"),
    (docker.errors.ImageNotFound("No such image: loadcmp/nginx:abc"), NotOnEngine, "No such image: loadcmp/nginx:abc"),
    (docker.errors.APIError("409 Client Error", explanation="Conflict. The container name\n is already in use"),
     LabError, "Conflict. The container name is already in use"),
    (docker.errors.APIError("500 Server Error: Internal Server Error"), LabError,
     "500 Server Error: Internal Server Error"),
    (docker.errors.BuildError("The command '/bin/sh -c make' returned a non-zero code: 2", build_log=[]),
     BuildError, "The command '/bin/sh -c make' returned a non-zero code: 2"),
    (docker.errors.StreamParseError(ValueError("Expecting value")), LabError,
     f"the Docker engine at {AT} sent an answer docker-py could not read (StreamParseError: Expecting value)"),
    (docker.errors.TLSParameterError("Path to a certificate and key files must be provided"), LabError,
     "TLSParameterError: Path to a certificate and key files must be provided. TLS configurations should map the "
     "Docker CLI client configurations. See https://docs.docker.com/engine/articles/https/ for API…"),  # cut at 200
    (docker.errors.DockerException("Invalid bind address format: tcp://h:x"), LabError,
     "DockerException: Invalid bind address format: tcp://h:x"),
    (REFUSED, DockerUnavailable, f"{LOST} (Connection refused)"),
    (rq.ReadTimeout("UnixHTTPConnectionPool(host='localhost', port=None): Read timed out."), DockerUnavailable,
     f"{LOST} (UnixHTTPConnectionPool(host='localhost', port=None): Read timed out.)"),
    (rq.ChunkedEncodingError(u3.ProtocolError("Response ended prematurely")), DockerUnavailable,
     f"{LOST} (Response ended prematurely)"),
    (u3.ProtocolError("Connection broken", ConnectionResetError(104, "Connection reset by peer")), DockerUnavailable,
     f"{LOST} (Connection reset by peer)"),
    (u3.ReadTimeoutError(None, "/containers/x/logs", "Read timed out."), DockerUnavailable,  # type: ignore[arg-type]
     f"{LOST} (ReadTimeoutError: None: Read timed out.)"),
    (docker.utils.socket.SocketError("Unexpected EOF"), DockerUnavailable, f"{LOST} (SocketError: Unexpected EOF)"),
    (BrokenPipeError(32, "Broken pipe"), DockerUnavailable, f"{LOST} (Broken pipe)"),
    (TimeoutError("timed out"), DockerUnavailable, f"{LOST} (timed out)"),
    (rq.InvalidURL("Not supported URL scheme http+docker"), LabError, "Not supported URL scheme http+docker"),
])
def test_each_error_of_docker_py_is_one_of_loadcmps(error, kind, message):
    mapped = engine_error(error, AT)
    assert type(mapped) is kind and str(mapped) == message


def test_an_engine_unnamed_is_not_named():
    assert str(engine_error(REFUSED)) == "the Docker engine stopped answering (Connection refused)"


def test_every_error_docker_py_defines_is_mapped():
    classes = [c for _, c in inspect.getmembers(docker.errors, inspect.isclass) if issubclass(c, Exception)]
    assert len(classes) > 15
    for cls in classes:
        init = cls.__init__  # their constructors differ: each is given plain words for what it takes
        arity = 1 if init is Exception.__init__ or issubclass(cls, docker.errors.APIError) else \
            len(inspect.signature(init).parameters) - 1
        e = cls(*["x"] * arity)
        mapped = engine_error(e)
        assert isinstance(mapped, LabError) and str(mapped), cls


@pytest.mark.parametrize("error", [ValueError("a bug"), KeyError("x"), OSError(28, "No space left on device"),
                                   UsageError("already one of ours")])
def test_what_is_no_engines_error_is_left_as_it_is(error):
    assert engine_error(error, AT) is None
    with pytest.raises(type(error)) as raised, engine_errors(AT):
        raise error
    assert raised.value is error


def test_the_block_raises_loadcmps_error_caused_by_docker_pys():
    with pytest.raises(DockerUnavailable, match="stopped answering") as raised, engine_errors(AT):
        raise REFUSED
    assert raised.value.__cause__ is REFUSED and raised.value.exit_code == 1


def test_an_error_mapped_deep_in_the_lab_is_named_by_the_command_that_knows_its_engine():
    """An image looked up without the engine's name, inside `answering(host)`: the user reads which engine."""
    host = resolve(AT)
    with pytest.raises(DockerUnavailable) as raised, answering(host):
        with engine_errors():
            raise REFUSED
    assert str(raised.value) == f"{LOST} (Connection refused)" and raised.value.__cause__ is REFUSED
    with pytest.raises(LabError) as worded, answering(host):  # an error the lab put in its own words stays so
        try:
            with engine_errors():
                raise REFUSED
        except LabError as e:
            raise LabError(f"loadcmp-x-web: its log is unreadable ({e})") from None
    assert str(worded.value) == "loadcmp-x-web: its log is unreadable (the Docker engine stopped answering " \
                                "(Connection refused))"


def test_stopped_answering_is_only_an_engine_gone():
    host = resolve(AT)
    assert str(stopped_answering(REFUSED, host)) == f"{LOST} (Connection refused)"
    gone = DockerUnavailable(f"{LOST} (Connection reset by peer)")  # mapped inside the lab already
    assert stopped_answering(gone, host) is gone
    assert stopped_answering(docker.errors.NotFound("No such container: x"), host) is None
    assert stopped_answering(ValueError("a bug"), host) is None
