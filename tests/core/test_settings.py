import typing
from pathlib import Path

import pytest

import ragcore.settings
from ragcore.settings import (
    SETTINGS,
    Settings,
    SettingsError,
    _text,
    answering_provider,
    bind_refusal,
    embedding_provider,
    example_file,
    graph_store_kind,
    load_settings,
)

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_are_specs():
    s = load_settings({})
    assert s.app_bind == "127.0.0.1"
    assert s.app_port == 8000
    assert s.embedding_dimensions == 3072
    assert s.max_output_tokens == 1024
    assert s.default_temperature == 0.3
    assert s.max_context_chars == 12000
    assert s.default_language == "en"
    assert s.language_detection_confidence_threshold == 0.7
    assert s.llm_fallback_providers == ()
    assert s.webhook_targets == ()
    assert s.usage_ledger is False
    assert s.budget_daily_tokens == 0
    assert s.service_api_key == ""


def test_every_bad_variable_is_reported_at_once_by_name():
    environ = {
        "MAX_CONTEXT_CHARS": "lots",
        "WEBHOOK_TARGETS": "crm=https://crm.example.com,broken",
        "CHATOPS_WEBHOOK_URL": "http://chat.example.com/hook",
        "LLM_PROVIDER": "skynet",
        "POSTGRES_PASSWORD": "p@ss:word",
        "APP_PORT": "70000",
        "DEFAULT_TEMPERATURE": "hot",
        "ADDON_ENCRYPTION_KEY": "not-a-key",
        "BUDGET_ROLE_DAILY_OVERRIDES": "support=many",
    }
    with pytest.raises(SettingsError) as raised:
        load_settings(environ)
    named = {problem.split(":")[0] for problem in raised.value.problems}
    assert named == set(environ)
    text = str(raised.value)
    assert "'lots'" in text
    assert "WEBHOOK_TARGETS: must be comma-separated name=https://… pairs" in text
    assert "https://" in text and "letters and digits only" in text
    assert "genai, openai, anthropic, extractive" in text


def test_a_webhook_target_must_be_https_and_its_url_is_not_shown():
    """A webhook URL often carries its token in the path: WEBHOOK_TARGETS is a secret."""
    with pytest.raises(SettingsError) as raised:
        load_settings({"WEBHOOK_TARGETS": "crm=http://hooks.shop.example/in/T0k3n"})
    [problem] = raised.value.problems
    assert problem.startswith("WEBHOOK_TARGETS: must be comma-separated name=https://… pairs")
    assert "T0k3n" not in problem and "hooks.shop" not in problem


def test_list_and_pair_settings_are_parsed():
    s = load_settings(
        {
            "WEBHOOK_TARGETS": " crm=https://crm.example.com/in , ops=https://ops.example.com ",
            "LLM_FALLBACK_PROVIDERS": "OpenAI, anthropic",
            "LLM_PROVIDER": "genai",
            "BUDGET_ROLE_DAILY_OVERRIDES": "support=5000,sales=0",
            "USAGE_LEDGER": "true",
            "LANGUAGE_DETECTION_SUPPORTED_LANGUAGES": "en,DE,fr",
            "EMAIL_ALLOWED_RECIPIENTS": "owner@shop.example, @shop.example",
        }
    )
    assert s.webhook_targets == (
        ("crm", "https://crm.example.com/in"),
        ("ops", "https://ops.example.com"),
    )
    assert s.llm_fallback_providers == ("openai", "anthropic")
    assert s.budget_role_daily_overrides == (("support", 5000), ("sales", 0))
    assert s.language_detection_supported_languages == ("en", "de", "fr")
    assert s.email_allowed_recipients == ("owner@shop.example", "@shop.example")


def test_the_environment_wins_over_the_dotenv_file():
    s = load_settings({"APP_PORT": "9000"}, {"APP_PORT": "8100", "MAX_CONTEXT_CHARS": "500"})
    assert s.app_port == 9000
    assert s.max_context_chars == 500


def test_blank_means_default():
    assert load_settings({"APP_PORT": "  ", "MAX_CONTEXT_CHARS": ""}).app_port == 8000


def test_the_primary_cannot_be_its_own_fallback():
    with pytest.raises(SettingsError, match="LLM_FALLBACK_PROVIDERS: lists the primary"):
        load_settings({"LLM_PROVIDER": "openai", "LLM_FALLBACK_PROVIDERS": "openai"})


def test_secrets_never_show_in_repr():
    s = load_settings({"SERVICE_API_KEY": "hunter2", "OPENAI_API_KEY": "sk-secret"})
    assert "hunter2" not in repr(s) and "sk-secret" not in repr(s)
    assert "service_api_key=***" in repr(s)


def test_each_field_has_the_type_its_setting_parses_to():
    """Settings declares its fields by hand; the table's parsers decide what they hold."""
    declared = typing.get_type_hints(Settings)
    for setting in SETTINGS:
        parsed = typing.get_type_hints(setting.parse, vars(ragcore.settings))["return"]
        assert declared[setting.field] == parsed, setting.name


MARKER = "SEKRET123"
# bad values built around the marker: at least one of them is bad for every secret
# setting that can be bad at all (one taking any text cannot)
SECRET_BAD_VALUES = (
    f"http://hooks.example/{MARKER}/x",  # the token in the path
    f"http://{MARKER}.example/hook",  # the host
    MARKER,
    f"{MARKER} with spaces:@/",
    f"whsec_{MARKER}!!",
    f"mysql://user:{MARKER}@db.example/{MARKER}",
    f"https:///{MARKER}",
)
SECRETS = [s for s in SETTINGS if s.secret]


def test_every_secret_setting_says_what_it_takes_without_its_value():
    # the requirement words are fixed before any value is seen: the one message a bad
    # secret gets
    for setting in SECRETS:
        assert setting.parse is _text or getattr(setting.parse, "requirement", ""), setting.name


@pytest.mark.parametrize("setting", SECRETS, ids=[s.name for s in SECRETS])
def test_a_bad_secret_is_named_and_never_shown_whole_or_in_part(setting):
    refused = 0
    for value in SECRET_BAD_VALUES:
        try:
            load_settings({setting.name: value})
        except SettingsError as error:
            refused += 1
            text = str(error) + repr(error.problems) + repr(error.args)
            assert MARKER.lower() not in text.lower()
            [problem] = error.problems
            assert problem.startswith(f"{setting.name}: must ")  # says what to change
            assert problem.endswith("(the value is not shown: it is a secret)")
    assert refused or setting.parse is _text, f"no bad value tried for {setting.name}"


def test_a_bad_chatops_url_says_https_without_the_url():
    with pytest.raises(SettingsError) as raised:
        load_settings({"CHATOPS_WEBHOOK_URL": "http://hooks.example.com/services/T0/B0/XyZsecret"})
    [problem] = raised.value.problems
    assert problem == (
        "CHATOPS_WEBHOOK_URL: must be an https:// URL with a host, such as "
        "https://hooks.example.com/… (the value is not shown: it is a secret)"
    )


def test_a_bad_ordinary_setting_still_shows_its_value():
    with pytest.raises(SettingsError) as raised:
        load_settings({"OPENAI_BASE_URL": "ftp://models.example"})
    assert "got 'ftp://models.example'" in str(raised.value)


def test_providers_follow_the_keys_present_else_offline():
    assert answering_provider(load_settings({})) == "extractive"
    assert embedding_provider(load_settings({})) == "local"
    keyed = load_settings({"OPENAI_API_KEY": "sk-x"})
    assert answering_provider(keyed) == "openai"
    assert embedding_provider(keyed) == "openai"
    chosen = load_settings({"OPENAI_API_KEY": "sk-x", "LLM_PROVIDER": "extractive"})
    assert answering_provider(chosen) == "extractive"


@pytest.mark.parametrize(
    ("environ", "refused"),
    [
        ({}, False),
        ({"APP_BIND": "::1"}, False),
        ({"APP_BIND": "0.0.0.0"}, True),
        ({"APP_BIND": "0.0.0.0", "SERVICE_API_KEY": "k"}, False),
        ({"APP_BIND": "192.168.1.10", "ALLOW_INSECURE_BIND": "true"}, False),
    ],
)
def test_a_public_bind_needs_a_key_or_an_explicit_opt_out(environ, refused):
    reason = bind_refusal(load_settings(environ))
    assert (reason is not None) == refused
    if refused:
        assert "SERVICE_API_KEY" in reason and "ALLOW_INSECURE_BIND" in reason


def test_env_example_lists_every_setting_with_its_default():
    assert (ROOT / ".env.example").read_text() == example_file()
    for setting in SETTINGS:
        assert f"\n{setting.name}={setting.default}\n" in example_file()


def test_budgets_without_the_ledger_are_refused_naming_both():
    with pytest.raises(SettingsError) as raised:
        load_settings({"BUDGET_DAILY_TOKENS": "1000", "BUDGET_ROLE_MONTHLY_OVERRIDES": "hr=5"})
    [problem] = raised.value.problems
    assert problem.startswith("USAGE_LEDGER:")
    assert "BUDGET_DAILY_TOKENS" in problem and "BUDGET_ROLE_MONTHLY_OVERRIDES" in problem
    assert load_settings({"BUDGET_DAILY_TOKENS": "0"}).budget_daily_tokens == 0


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("http://graph:7474", "must be a Neo4j URI"),
        ("graph:7687", "must be a Neo4j URI"),
        ("bolt://", "must be a Neo4j URI"),
        ("bolt://neo4j:hunter2@graph:7687", "must not hold credentials"),
    ],
)
def test_a_graph_uri_is_a_neo4j_address_without_credentials(uri, problem):
    with pytest.raises(SettingsError) as raised:
        load_settings({"GRAPH_URI": uri})
    assert f"GRAPH_URI: {problem}" in str(raised.value)
    assert "hunter2" not in str(raised.value)


def test_where_the_graph_lives():
    assert graph_store_kind(load_settings({})) is None
    assert graph_store_kind(load_settings({"GRAPH_ENABLED": "true"})) == "postgres"
    neo4j = load_settings({"GRAPH_URI": "BOLT://graph:7687"})
    assert graph_store_kind(neo4j) == "neo4j" and neo4j.graph_uri == "bolt://graph:7687"
    off = load_settings({"GRAPH_URI": "neo4j+s://graph", "GRAPH_ENABLED": "false"})
    assert graph_store_kind(off) is None
