"""In CI the viewer's, the MQTT transport's and the fast kernel's tests must run: a skip
there is a failure.

Elsewhere they skip with their reason (``-ra`` prints it): a machine without Mosquitto runs
the MQTT tests on amqtt only, one where no Chromium could be had skips the viewer's tests.
.ci/run installs Mosquitto and Chromium, and runs with CI=true.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Generator, Iterator

import pytest

from tests.transport_support import BROKERS, Broker, need_broker, start_broker

MUST_RUN_IN_CI = ("test_viewer.py", "test_transport_mqtt.py", "test_mqtt_auth.py", "test_kernel.py")


def pytest_configure(config: pytest.Config) -> None:
    """Searches play out on the fast kernel once it is compiled and on the Python one
    until then (``strategies.kernel.ready_kernel``): compile it before any test, so that
    every test of this run plays on the same kernel."""
    from strategies.kernel import warm_up

    warm_up(background=False)
    # A shell runs a background job with SIGINT ignored, and its children inherit
    # that: their Ctrl-C (what the tournament's and the viewer's tests send) would do
    # nothing. A handler is reset to the default on exec, so the programs the tests
    # start get the Ctrl-C of a terminal again.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    skipped = report.skipped and not hasattr(report, "wasxfail")
    if skipped and os.environ.get("CI") == "true" and item.path.name in MUST_RUN_IN_CI:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        reason = str(reason).removeprefix("Skipped: ")
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where it must run: {reason}"
    return report


@pytest.fixture(scope="module", params=BROKERS)
def broker_name(request: pytest.FixtureRequest) -> str:
    """Each MQTT broker in turn; a test on one this machine lacks skips (fails in CI)."""
    name: str = request.param
    need_broker(name)
    return name


@pytest.fixture(scope="module")
def broker(broker_name: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    """A running broker of each kind, shared by a module's tests (topics differ by match)."""
    started = start_broker(broker_name, tmp_path_factory.mktemp(broker_name))
    try:
        yield started
    finally:
        started.stop()
