"""Where an action or a workflow call may connect, pure: a host read in every spelling a
resolver accepts, the kinds of address and which of them a private-targets setting may
allow, the service's own address, and how refusals read."""

import pytest

from ragcore.actions.kinds import action_reach
from ragcore.retry import Outcome, RetryPolicy, next_delay
from ragcore.settings import load_settings
from ragcore.targets.addresses import (
    LOOPBACK_ADDRESSES,
    Reach,
    address_refusal,
    addresses_refusal,
    host_addresses,
    inet_aton,
    normal_host,
    own_networks,
    url_refusal,
)
from ragcore.workflows.definitions import workflow_reach
from tests.core.test_workflows import NOW

STRICT = Reach("calls", "SETTING", "the setting is off")
LOOSE = Reach("calls", "SETTING", "the setting is off", allow_private=True)
LOCAL_HINT = "set WORKFLOW_ALLOW_PRIVATE_TARGETS=true to call a workflow engine on this host or LAN"


def workflows(**settings):
    environ = {name.upper(): str(value) for name, value in settings.items()}
    return workflow_reach(load_settings(environ))


# ---------------------------------------------------------------- reading a host


@pytest.mark.parametrize(
    "spelled, address",
    [
        ("127.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),  # a.b: the last part fills three bytes
        ("127.0.1", "127.0.0.1"),  # a.b.c: the last part fills two
        ("2130706433", "127.0.0.1"),  # one decimal number
        ("0x7f000001", "127.0.0.1"),  # one hex number
        ("0X7F000001", "127.0.0.1"),
        ("017700000001", "127.0.0.1"),  # one octal number
        ("0177.0.0.1", "127.0.0.1"),  # octal parts
        ("0x7f.1", "127.0.0.1"),
        ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
        ("2852039166", "169.254.169.254"),
        ("0", "0.0.0.0"),
        ("0x", "0.0.0.0"),  # inet_aton reads a bare 0x as 0
        ("1.2.3", "1.2.0.3"),
    ],
)
def test_every_ipv4_spelling_inet_aton_accepts_is_read_as_its_address(spelled, address):
    assert str(inet_aton(spelled)) == address
    assert host_addresses(spelled) == [address]


@pytest.mark.parametrize(
    "text", ["1.2.3.256", "256.1", "1.2.3.4.5", "08.1.1.1", "0x1g", "", "hooks.example.com", "1e3"]
)
def test_what_is_not_an_ipv4_spelling_is_a_name(text):
    assert inet_aton(text) is None


@pytest.mark.parametrize(
    "host, normal",
    [
        ("LOCALHOST.", "localhost"),
        ("Hooks.Example.COM", "hooks.example.com"),
        ("１２７.０.０.１", "127.0.0.1"),  # full-width digits, as IDNA maps them
        ("127。0。0。1", "127.0.0.1"),  # ideographic full stops
        ("bücher.example", "xn--bcher-kva.example"),
        ("[::1]", "::1"),
    ],
)
def test_a_host_is_read_as_a_resolver_reads_it(host, normal):
    assert normal_host(host) == normal


def test_a_host_that_cannot_be_a_name_is_an_error():
    with pytest.raises(ValueError):
        normal_host("a..b")


def test_localhost_names_are_loopback_without_a_lookup_and_other_names_need_one():
    for name in ("localhost", "api.localhost", "localhost.localdomain", "ip6-localhost"):
        assert host_addresses(name) == list(LOOPBACK_ADDRESSES)
    assert host_addresses("::ffff:127.0.0.1") == ["::ffff:127.0.0.1"]
    assert host_addresses("fe80::1%eth0") == ["fe80::1"]
    assert host_addresses("hooks.example.com") is None
    assert host_addresses("n8n") is None


# ---------------------------------------------------------------- kinds of address


@pytest.mark.parametrize(
    "address, what",
    [
        ("127.0.0.1", "a loopback address"),
        ("127.8.9.10", "a loopback address"),
        ("::1", "a loopback address"),
        ("::ffff:127.0.0.1", "a loopback address"),
        ("10.1.2.3", "a private address"),
        ("172.16.0.9", "a private address"),
        ("192.168.1.1", "a private address"),
        ("fc00::5", "a private address"),
        ("fd12:3456::1", "a private address"),
        ("::ffff:10.0.0.1", "a private address"),
        ("100.64.0.1", "a shared (carrier-grade NAT) address"),
    ],
)
def test_loopback_and_private_addresses_only_with_the_setting(address, what):
    refusal = address_refusal(address, STRICT)
    assert refusal is not None and what in refusal and refusal.endswith("the setting is off")
    assert address_refusal(address, LOOSE) is None


@pytest.mark.parametrize(
    "address, what",
    [
        ("169.254.169.254", "a cloud metadata address"),
        ("fd00:ec2::254", "a cloud metadata address"),
        ("169.254.170.2", "a cloud metadata address"),
        ("100.100.100.200", "a cloud metadata address"),
        ("::ffff:169.254.169.254", "a cloud metadata address"),
        ("169.254.10.10", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("fe80::1%eth0", "a link-local address"),
        ("0.0.0.0", "an unspecified address"),
        ("0.1.2.3", "an unspecified address"),
        ("::", "an unspecified address"),
        ("224.0.0.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("240.0.0.1", "a reserved address"),
        ("255.255.255.255", "a reserved address"),
        ("192.0.2.1", "not a public address"),  # documentation range
        ("64:ff9b::7f00:1", "a loopback address behind an address translator"),  # NAT64
        ("2002:a00:1::", "a private address behind an address translator"),  # 6to4
    ],
)
def test_metadata_link_local_and_other_unroutable_addresses_never(address, what):
    for reach in (STRICT, LOOSE):
        refusal = address_refusal(address, reach)
        assert refusal is not None and what in refusal
        assert refusal.endswith("calls never go there")


@pytest.mark.parametrize(
    "address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "64:ff9b::5db8:d822"]
)
def test_public_addresses_pass(address):
    assert address_refusal(address, STRICT) is None


def test_one_refused_address_among_public_ones_refuses_the_name():
    refusal = addresses_refusal("hooks.example.com", ["93.184.216.34", "127.0.0.1"], STRICT)
    assert refusal == "hooks.example.com: 127.0.0.1 is a loopback address; the setting is off"
    assert addresses_refusal("x.example", [], STRICT) == "x.example did not resolve to any address"
    assert addresses_refusal("hooks.example.com", ["93.184.216.34"], STRICT) is None


# ---------------------------------------------------------------- the service itself


def test_the_service_own_address_and_port_are_refused_even_with_the_setting():
    reach = workflows(workflow_allow_private_targets="true", app_bind="127.0.0.1", app_port=8000)
    for url in ("http://127.0.0.1:8000/chat", "http://127.1:8000/", "http://localhost:8000/x"):
        refusal = url_refusal(url, reach)
        assert refusal is not None and "port 8000 is this service itself" in refusal
    assert url_refusal("http://127.0.0.1:5678/webhook/x", reach) is None  # another port


def test_bound_to_every_interface_the_hosts_own_addresses_are_the_service_too():
    networks = own_networks("0.0.0.0", ["192.168.1.5", "fe80::1%eth0", "not an address"])
    reach = Reach(
        "calls",
        "S",
        "off",
        allow_private=True,
        schemes=("http",),
        service_port=8000,
        service_networks=networks,
    )
    assert "this service itself" in url_refusal("http://192.168.1.5:8000/", reach)
    assert "this service itself" in url_refusal("http://127.0.0.2:8000/", reach)
    assert url_refusal("http://192.168.1.6:8000/", reach) is None
    assert url_refusal("http://192.168.1.5:5678/", reach) is None


def test_bound_to_one_address_only_that_address_is_the_service():
    reach = workflows(workflow_allow_private_targets="true", app_bind="192.168.1.5", app_port=8000)
    assert "this service itself" in url_refusal("http://192.168.1.5:8000/", reach)
    assert url_refusal("http://127.0.0.1:8000/", reach) is None


def test_a_service_on_a_public_address_is_refused_without_the_setting_too():
    reach = workflows(app_bind="93.184.216.34", app_port=8000)
    assert "this service itself" in url_refusal("http://93.184.216.34:8000/", reach)
    assert url_refusal("http://93.184.216.34:8080/", reach) is None
    assert len(own_networks("localhost")) == 2 and own_networks("not an address") == ()


# ---------------------------------------------------------------- workflow targets


NEVER = "workflow calls never go there"
LOOPBACK = f"a loopback address; {LOCAL_HINT}"
METADATA_NAME = f"a cloud metadata name; {NEVER}"
ISSUE_TARGETS = [
    ("http://169.254.169.254/latest/", f"169.254.169.254 is a cloud metadata address; {NEVER}"),
    ("http://[fd00:ec2::254]/", f"fd00:ec2::254 is a cloud metadata address; {NEVER}"),
    ("http://10.0.0.5:5678/webhook/x", f"10.0.0.5 is a private address; {LOCAL_HINT}"),
    ("http://192.168.1.10/hook", f"192.168.1.10 is a private address; {LOCAL_HINT}"),
    ("http://127.1:5678/", f"127.1: 127.0.0.1 is a loopback address; {LOCAL_HINT}"),
    ("http://2130706433/", f"2130706433: 127.0.0.1 is a loopback address; {LOCAL_HINT}"),
    ("http://0x7f000001/", f"0x7f000001: 127.0.0.1 is a loopback address; {LOCAL_HINT}"),
    ("http://[::ffff:127.0.0.1]/", f"::ffff:127.0.0.1 (127.0.0.1) is {LOOPBACK}"),
    ("http://0.0.0.0:5678/", f"0.0.0.0 is an unspecified address; {NEVER}"),
    ("http://localhost:5678/x", f"localhost: 127.0.0.1 is a loopback address; {LOCAL_HINT}"),
    ("http://metadata.google.internal/", f"metadata.google.internal is {METADATA_NAME}"),
]  # fmt: skip


@pytest.mark.parametrize("url, refusal", ISSUE_TARGETS)
def test_every_spelling_of_a_non_public_target_is_refused_without_a_lookup(url, refusal):
    assert url_refusal(url, workflows()) == refusal


def test_with_the_setting_a_local_engine_is_allowed_but_metadata_and_link_local_never():
    reach = workflows(workflow_allow_private_targets="true")
    assert url_refusal("http://localhost:5678/webhook/abc", reach) is None
    assert url_refusal("http://127.1:5678/webhook/abc", reach) is None
    assert url_refusal("http://192.168.1.10/hook", reach) is None
    for url in (
        "http://169.254.169.254/",
        "http://[fd00:ec2::254]/",
        "http://169.254.10.10/",
        "http://[fe80::1%25eth0]/",
        "http://0.0.0.0:5678/",
        "http://metadata.google.internal/",
    ):
        assert "never go there" in url_refusal(url, reach)


def test_workflows_take_http_and_https_and_names_are_left_to_the_lookup():
    reach = workflows()
    assert reach.schemes == ("http", "https") and reach.allow_private is False
    assert url_refusal("http://hooks.example.com/catch/1?token=abc", reach) is None
    assert url_refusal("https://93.184.216.34/", reach) is None
    assert url_refusal("ftp://hooks.example.com/", reach) == (
        "only http:// and https:// targets are called"
    )


def test_the_setting_defaults_to_off():
    assert load_settings({}).workflow_allow_private_targets is False
    assert load_settings({"WORKFLOW_ALLOW_PRIVATE_TARGETS": "true"}).workflow_allow_private_targets


# ---------------------------------------------------------------- action targets


def test_actions_take_https_only_and_say_which_setting_is_off():
    reach = action_reach(load_settings({}))
    assert url_refusal("https://hooks.example.com/x?y=1", reach) is None
    assert url_refusal("http://hooks.example.com/x", reach) == "only https:// targets are called"
    assert url_refusal("https://user:pw@hooks.example.com/", reach) is not None
    assert url_refusal("https:///nohost", reach) == "the URL has no host"
    assert url_refusal("https://127.1/in", reach) == (
        "127.1: 127.0.0.1 is a loopback address; ACTIONS_ALLOW_PRIVATE_TARGETS is off; "
        "only public addresses are called"
    )
    loose = action_reach(load_settings({"ACTIONS_ALLOW_PRIVATE_TARGETS": "true"}))
    assert url_refusal("https://127.0.0.1/in", loose) is None
    # local testing never opens metadata, link-local or unspecified addresses
    assert "metadata" in url_refusal("https://169.254.169.254/", loose)
    assert "link-local" in url_refusal("https://169.254.1.1/", loose)
    assert "unspecified" in url_refusal("https://0.0.0.0/", loose)


# ---------------------------------------------------------------- a refused workflow call


def test_a_refused_call_is_not_retried_and_says_why():
    refused = Outcome(refused="127.0.0.1 is a loopback address; set it")
    assert not RetryPolicy().retries(refused) and not refused.delivered
    assert next_delay(RetryPolicy(), 1, refused, NOW) is None
    assert refused.describe() == "refused: 127.0.0.1 is a loopback address; set it"


def test_a_redirect_says_it_is_not_followed_and_a_failure_says_how():
    assert Outcome(307).describe() == "HTTP 307 (a redirect, which is not followed)"
    assert next_delay(RetryPolicy(), 1, Outcome(307), NOW) is None
    failed = Outcome(failure="the name could not be resolved")
    assert failed.describe() == "could not connect (the name could not be resolved)"
    assert next_delay(RetryPolicy(), 1, failed, NOW) == 1.0
