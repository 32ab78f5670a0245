"""Where a data source may be, pure: the hosts a body spells literally, judged by the
address rules of workflows and actions, Unix sockets only when allowed, and never the
service's own database (its socket directory, its address and port, DATA_DIR)."""

import pytest

from ragcore.integrations.addresses import (
    OwnDatabase,
    database_networks,
    endpoints,
    own_database_refusal,
    save_refusal,
    targets,
)

STRICT, LOOSE = targets(), targets(allow_private=True)
HOST_IFACES = ("192.168.1.5", "fe80::1%eth0")
# the service on DATABASE_URL=postgresql://…@localhost:5432/…, and on the embedded server
OWN = OwnDatabase(
    socket_dirs=("/srv/ragchat/data/postgres",),
    networks=database_networks(["127.0.0.1", "::1"], HOST_IFACES),
    ports=(5432,),
    data_dir="/srv/ragchat/data",
)


def refused(kind, own=OWN, rules=LOOSE, sockets=True, **credentials):
    return save_refusal(kind, credentials, rules, own, sockets)


@pytest.mark.parametrize(
    "credentials, where",
    [
        ({"host": "127.0.0.1", "port": "5432"}, "host"),
        ({"host": "192.168.1.5"}, "host"),  # this host's LAN address: the same server
        ({"host": "localhost"}, "host"),
        ({"url": "postgresql://u:p@[::1]:5432/d"}, "url"),
        ({"url": "postgresql://u:p@db.example/d?host=127.0.0.2&port=5432"}, "url"),
        ({"url": "postgresql://u:p@/d?hostaddr=127.0.0.1"}, "url"),
    ],
)
def test_the_services_own_database_is_refused_with_every_setting_on(credentials, where):
    field, reason = refused("postgresql", **credentials)
    assert field == where and "the service's own database" in reason, reason


def test_another_port_or_server_is_not_the_services_own():
    assert refused("postgresql", host="127.0.0.1", port="5433") is None
    assert refused("mysql", host="10.0.0.7") is None
    assert own_database_refusal("10.0.0.7", 5432, OWN) is None
    assert own_database_refusal("::ffff:127.0.0.1", 5432, OWN) is not None


def test_unix_sockets_are_refused_unless_allowed_and_never_the_services_own():
    field, reason = refused("postgresql", sockets=False, host="/run/postgresql")
    assert (field, reason) == (
        "host",
        "host: /run/postgresql is a Unix socket; set INTEGRATIONS_ALLOW_UNIX_SOCKETS=true to "
        "reach a database on this host through its socket",
    )
    assert refused("postgresql", host="/run/postgresql") is None
    own = refused("postgresql", host="/srv/ragchat/data/postgres/")
    assert own is not None and "where the service's own database listens" in own[1]
    under = refused("postgresql", host="/srv/ragchat/data/other")
    assert under is not None and "under DATA_DIR" in under[1]
    by_url = refused(
        "postgresql", url="postgresql://postgres@/ragchat?host=/srv/ragchat/data/postgres"
    )
    assert by_url is not None and by_url[0] == "url"
    mongo = refused("mongodb", sockets=False, url="mongodb://%2Ftmp%2Fmongodb-27017.sock")
    assert mongo is not None and "is a Unix socket" in mongo[1]


@pytest.mark.parametrize(
    "kind, credentials, field",
    [
        ("rest_api", {"base_url": "https://10.1.1.1/api"}, "base_url"),
        ("hubspot", {"api_base": "https://0x7f000001"}, "api_base"),
        ("salesforce", {"login_url": "https://[::1]:8443"}, "login_url"),
        ("shopify", {"shop_domain": "127.0.0.1"}, "shop_domain"),
        ("stripe", {"api_base": "https://localhost"}, "api_base"),
        ("mysql", {"url": "mysql://u:secret@192.168.0.9/d"}, "url"),
        ("mongodb", {"url": "mongodb://u:secret@db.example,10.0.0.1:27018/?tls=true"}, "url"),
        ("google_sheets", {"service_account_json": '{"token_uri": "https://127.0.0.1/t"}'},
         "service_account_json"),
    ],
)  # fmt: skip
def test_private_hosts_need_the_setting(kind, credentials, field):
    found = save_refusal(kind, credentials, STRICT, OwnDatabase(), False)
    assert found is not None and found[0] == field, found
    assert found[1].endswith(
        "set INTEGRATIONS_ALLOW_PRIVATE_TARGETS=true to reach a data source on this host or LAN"
    )
    assert "secret" not in found[1]
    assert save_refusal(kind, credentials, LOOSE, OwnDatabase(), False) is None


def test_metadata_and_link_local_are_refused_always_and_names_wait_for_their_lookup():
    for host in ("169.254.169.254", "metadata.google.internal", "fe80::1"):
        found = refused("mysql", host=host)
        assert found is not None and "never go there" in found[1], host
    assert refused("mysql", rules=STRICT, host="db.example.com") is None  # judged at use
    assert [e.host for e in endpoints("mongodb", {"url": "mongodb://a:1,[::1]:2/x"})] == [
        "a",
        "::1",
    ]
