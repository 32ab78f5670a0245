"""deploy/: what an operator relies on in the compose file and the Dockerfile.

There is no Docker engine in the test environment, so the files are read as
Compose and Docker read them: YAML with merge keys and ``${VAR}`` interpolation,
and Dockerfile instructions. The container's environment is then rebuilt the way
Compose builds it (image ENV < env_file < environment) and given to the real
settings parser and start-up checks, and the image's health check command is run
against the real app.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import trio
import yaml
from dotenv import dotenv_values

from ragcore.settings import bind_refusal, example_file, load_settings
from voiceio.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
SERVICES = ("db", "app", "voice", "worker")
RAGCHAT_SERVICES = ("app", "voice", "worker")
OPERATOR = {"POSTGRES_PASSWORD": "Dbpass123", "SERVICE_API_KEY": "k3y"}


# ---------------------------------------------------------------- reading the files


def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[?-])(?P<arg>[^}]*))?\}")


class MissingVariable(Exception):
    pass


def interpolate(value: str, env: dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}`` and ``${VAR:?error}`` (and ``$$``)."""

    def substitute(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        value = env.get(name, "")
        if op in (":?", "?") and not value:
            raise MissingVariable(f"{name}: {arg}")
        if op in (":-", "-") and not value:
            return arg
        return value

    return _VARIABLE.sub(substitute, value.replace("$$", "\0")).replace("\0", "$")


def environment_of(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.partition("=")[::2] for item in env)
    return {key: str(value) for key, value in env.items()}


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    instructions: list[tuple[str, str]] = []
    pending = ""
    for line in (DEPLOY / "Dockerfile").read_text().splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        whole = pending + stripped
        pending = ""
        keyword, _, arguments = whole.partition(" ")
        instructions.append((keyword.upper(), arguments.strip()))
    return instructions


def last(instruction: str) -> str:
    found = [arguments for keyword, arguments in dockerfile() if keyword == instruction]
    assert found, f"the Dockerfile has no {instruction}"
    return found[-1]


def image_env() -> dict[str, str]:
    env: dict[str, str] = {}
    for keyword, arguments in dockerfile():
        if keyword == "ENV":
            for pair in arguments.split():
                key, _, value = pair.partition("=")
                env[key] = value
    return env


def healthcheck_command() -> list[str]:
    arguments = last("HEALTHCHECK")
    _, _, command = arguments.partition("CMD ")
    return json.loads(command)


def container_environment(service_name: str, host_env: dict[str, str]) -> dict[str, str]:
    """The environment Compose gives the container: image ENV < env_file < environment.

    The env_file is a .env copied unchanged from .env.example, as the README says.
    """
    service = compose()["services"][service_name]
    env = dict(image_env())
    dotenv = dotenv_values(stream=io.StringIO(example_file()))
    env.update({key: value or "" for key, value in dotenv.items()})
    env.update(host_env)
    env.update({k: interpolate(v, host_env) for k, v in environment_of(service).items()})
    return env


def published_ports(service: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(host_ip, host_port, container_port) of each published port, short or long syntax."""
    ports = []
    for entry in service.get("ports", []):
        if isinstance(entry, dict):
            ports.append(
                (
                    str(entry.get("host_ip", "")),
                    str(entry.get("published", "")),
                    str(entry["target"]),
                )
            )
            continue
        parts = str(entry).split("/")[0].split(":")
        if len(parts) == 3:
            ports.append((parts[0], parts[1], parts[2]))
        elif len(parts) == 2:
            ports.append(("", parts[0], parts[1]))
        else:
            ports.append(("", "", parts[0]))
    return ports


# ---------------------------------------------------------------- compose


def test_the_four_services_exist_and_all_but_voice_start_by_default():
    services = compose()["services"]
    assert set(SERVICES) <= set(services)
    for name in ("db", "app", "worker"):
        assert "profiles" not in services[name], name
    # voice needs the speech key and the telephony token: a plain `up` must not start it
    assert services["voice"]["profiles"] == ["voice"]


@pytest.mark.parametrize("name", RAGCHAT_SERVICES)
def test_every_ragchat_service_runs_a_command_the_cli_has(name):
    service = compose()["services"][name]
    program, subcommand = service["command"]
    assert program == "ragchat"
    assert subcommand in COMMANDS, f"`ragchat {subcommand}`"


@pytest.mark.parametrize("name", SERVICES)
def test_every_published_port_binds_loopback_only(name):
    for host_ip, host_port, container_port in published_ports(compose()["services"][name]):
        assert host_ip == "127.0.0.1", f"{name} publishes {host_port}:{container_port} widely"


def test_the_api_and_voice_ports_are_published_and_the_database_is_not():
    services = compose()["services"]
    assert published_ports(services["app"]) == [("127.0.0.1", "8000", "8000")]
    assert published_ports(services["voice"]) == [("127.0.0.1", "8765", "8765")]
    assert published_ports(services["db"]) == []
    assert published_ports(services["worker"]) == []


@pytest.mark.parametrize("name", SERVICES)
def test_every_service_that_uses_the_database_requires_its_password(name):
    env = environment_of(compose()["services"][name])
    assert env["POSTGRES_PASSWORD"].startswith("${POSTGRES_PASSWORD:?")
    with pytest.raises(MissingVariable, match="POSTGRES_PASSWORD"):
        interpolate(env["POSTGRES_PASSWORD"], {})


@pytest.mark.parametrize("name", RAGCHAT_SERVICES)
def test_the_database_url_is_built_from_the_password_and_reaches_the_db_service(name):
    env = environment_of(compose()["services"][name])
    assert "${POSTGRES_PASSWORD" in env["DATABASE_URL"]
    url = interpolate(env["DATABASE_URL"], OPERATOR)
    assert url == "postgresql://ragchat:Dbpass123@db:5432/ragchat"
    db_env = environment_of(compose()["services"]["db"])
    assert db_env["POSTGRES_USER"] == "ragchat"
    assert db_env["POSTGRES_DB"] == "ragchat"


def test_the_database_keeps_its_data_in_a_named_volume_and_has_a_readiness_check():
    spec = compose()
    db = spec["services"]["db"]
    assert db["image"].startswith("pgvector/pgvector:")
    [mount] = db["volumes"]
    volume, _, path = mount.partition(":")
    assert volume in spec["volumes"]
    assert path == "/var/lib/postgresql/data"
    assert "pg_isready" in db["healthcheck"]["test"]


@pytest.mark.parametrize("name", RAGCHAT_SERVICES)
def test_ragchat_services_wait_for_a_healthy_database_and_read_an_optional_dotenv(name):
    service = compose()["services"][name]
    assert service["depends_on"]["db"]["condition"] == "service_healthy"
    assert service["env_file"] == [{"path": "../.env", "required": False}]
    assert service["build"] == {
        "context": "..",
        "dockerfile": "deploy/Dockerfile",
        "args": {"EXTRAS": "${RAGCHAT_EXTRAS:-}"},
    }
    assert (DEPLOY / service["build"]["context"] / service["build"]["dockerfile"]).is_file()


def test_the_api_requires_a_key_and_never_uses_the_insecure_bind_escape_hatch():
    env = environment_of(compose()["services"]["app"])
    assert env["SERVICE_API_KEY"].startswith("${SERVICE_API_KEY:?")
    assert env["ALLOW_INSECURE_BIND"] == "false"
    with pytest.raises(MissingVariable, match="SERVICE_API_KEY"):
        container_environment("app", {"POSTGRES_PASSWORD": "Dbpass123"})


def test_the_app_container_starts_listening_on_the_published_port():
    """A .env copied from .env.example says APP_BIND=127.0.0.1; compose must win over it."""
    env = container_environment("app", OPERATOR)
    settings = load_settings(env)
    assert bind_refusal(settings) is None  # `ragchat serve` would not refuse to start
    assert settings.app_bind == "0.0.0.0"
    [(_, _, container_port)] = published_ports(compose()["services"]["app"])
    assert settings.app_port == int(container_port)
    assert settings.database_url == "postgresql://ragchat:Dbpass123@db:5432/ragchat"
    assert settings.service_api_key == "k3y"


def test_a_password_that_does_not_fit_in_the_url_stops_the_app_with_a_clear_message():
    env = container_environment("app", {**OPERATOR, "POSTGRES_PASSWORD": "p@ss/word"})
    with pytest.raises(ValueError, match="POSTGRES_PASSWORD: must use letters and digits only"):
        load_settings(env)


def test_the_voice_and_worker_services_have_checks_of_their_own_not_the_apis():
    """The image's check asks the HTTP API, which neither runs. The worker's check reads
    its heartbeat file (run for real in test_kubernetes.py); the voice server's connects
    to its port."""
    services = compose()["services"]
    for name in ("voice", "worker"):
        test = services[name]["healthcheck"]["test"]
        assert test[:3] == ["CMD", "python", "-c"], name
        assert "/health" not in test[3], name
    assert "worker.alive" in services["worker"]["healthcheck"]["test"][3]
    voice_port = environment_of(services["voice"])["VOICE_PORT"]
    assert f", {voice_port})" in services["voice"]["healthcheck"]["test"][3]


async def run_voice_check(port: int) -> int:
    [_, python, flag, code] = compose()["services"]["voice"]["healthcheck"]["test"]
    code = code.replace(", 8765)", f", {port})")
    result = await trio.run_process(
        [sys.executable, flag, code], check=False, capture_stdout=True, capture_stderr=True
    )
    return result.returncode


async def test_the_voice_check_passes_while_the_port_accepts_connections():
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        assert await run_voice_check(port) != 0  # bound, not listening: refused
        sock.listen(1)
        assert await run_voice_check(port) == 0


def _seconds(duration: str) -> int:
    match = re.fullmatch(r"(\d+)s", duration)
    assert match, f"stop_grace_period {duration!r}: write it in seconds"
    return int(match[1])


@pytest.mark.parametrize("name", RAGCHAT_SERVICES)
def test_compose_waits_past_the_shutdown_grace_before_killing(name):
    """Compose sets SHUTDOWN_GRACE_SECONDS itself (a .env value would not move the stop
    grace period with it) and waits longer than that before SIGKILL: the server cuts off
    what is left 5 s after the grace, then closes the service."""
    service = compose()["services"][name]
    grace_setting = environment_of(service)["SHUTDOWN_GRACE_SECONDS"]
    grace = load_settings({"SHUTDOWN_GRACE_SECONDS": grace_setting}).shutdown_grace_seconds
    assert _seconds(service["stop_grace_period"]) >= grace + 10


def test_the_api_leaves_the_jobs_to_the_worker_which_starts_with_it():
    services = compose()["services"]
    assert not load_settings(container_environment("app", OPERATOR)).run_jobs
    assert "profiles" not in services["worker"]


def test_the_compose_file_is_valid_for_the_compose_specification():
    """check-jsonschema's vendored compose-spec schema: what `docker compose config`
    validates the file against (no download: the schema is in the package)."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.compose-spec",
            str(DEPLOY / "compose.yaml"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_compose_schema_refuses_a_spoilt_file():
    schema = json.loads(
        (
            resources.files("check_jsonschema") / "builtin_schemas/vendor/compose-spec.json"
        ).read_text()
    )
    validator = jsonschema.Draft7Validator(schema)
    assert not list(validator.iter_errors(compose()))
    spoilt = compose()
    spoilt["services"]["worker"]["healthcheck"]["retrys"] = 3
    assert list(validator.iter_errors(spoilt))


# ---------------------------------------------------------------- Dockerfile


def test_the_image_is_python_311_slim_and_installs_the_project():
    assert dockerfile()[0] == ("FROM", "python:3.11-slim")
    assert installed_by_the_image("") == "."


def installed_by_the_image(extras: str) -> str:
    """What the image's `pip install` installs, built with ``--build-arg EXTRAS=extras``:
    its argument as the image's shell (POSIX sh) expands it."""
    runs = [arguments for keyword, arguments in dockerfile() if keyword == "RUN"]
    [install] = [run for run in runs if "pip install " in run]
    target = install.split("pip install ", 1)[1].split(" ", 1)[0]
    expanded = subprocess.run(
        ["sh", "-c", f'printf "%s" {target}'],
        env={"EXTRAS": extras},
        capture_output=True,
        text=True,
        check=True,
    )
    return expanded.stdout


def test_the_image_installs_a_dictionary_for_every_language_translated():
    from ragcore.chat.translation import DICTIONARIES
    from ragcore.settings import load_settings

    runs = [arguments for keyword, arguments in dockerfile() if keyword == "RUN"]
    [install] = [run for run in runs if "apt-get install" in run]
    packages = {f"dict-freedict-{code}-eng" for code, _ in DICTIONARIES.values()}
    assert packages <= set(install.replace("\\", " ").split())
    assert load_settings({}).dictionary_dir == "/usr/share/dictd"  # where Debian puts them


def test_the_image_has_the_graph_extra_only_when_built_with_it():
    """The Neo4j driver is the graph extra's: left out by default (GRAPH_URI is then a
    start-up error naming it), in with --build-arg EXTRAS=graph, or from compose with
    RAGCHAT_EXTRAS=graph in .env."""
    assert ("ARG", 'EXTRAS=""') in dockerfile()
    assert installed_by_the_image("graph") == ".[graph]"
    compose_arg = compose()["services"]["app"]["build"]["args"]["EXTRAS"]
    assert installed_by_the_image(interpolate(compose_arg, {})) == "."
    assert installed_by_the_image(interpolate(compose_arg, {"RAGCHAT_EXTRAS": "graph"})) == (
        ".[graph]"
    )


def test_the_image_builds_the_faster_local_model_into_itself(tmp_path):
    """The optimised MiniLM is a layer of the image (built after the install, as root,
    before the unprivileged USER), so a new pod with an empty DATA_DIR loads it at once
    instead of building it (seconds of CPU on every start). The image's RUN is run here
    as the image runs it, into a folder of the test's, and a fresh embedder finds it."""
    from ragio.providers.local import MiniLM, minilm_files
    from ragio.providers.minilm_graph import INSTALLED_MODELS, kept_path
    from tests.io.processes import run_cli

    instructions = dockerfile()
    runs = [i for i, (keyword, _) in enumerate(instructions) if keyword == "RUN"]
    [install] = [i for i in runs if "pip install " in instructions[i][1]]
    [prepare] = [i for i in runs if instructions[i][1].startswith("ragchat prepare-models")]
    [user] = [i for i, (keyword, _) in enumerate(instructions) if keyword == "USER"]
    assert install < prepare < user
    assert instructions[prepare][1] == "ragchat prepare-models"  # into the installation
    assert Path(sys.prefix) / "share" / "ragchat" / "models" == INSTALLED_MODELS

    built = run_cli("prepare-models", "--into", str(tmp_path / "image"), cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    source, _ = minilm_files()
    assert built.stdout.strip() == f"built: {kept_path(source, tmp_path / 'image')}"
    again = run_cli("prepare-models", "--into", str(tmp_path / "image"), cwd=tmp_path)
    assert again.stdout.startswith("already there: ")

    embedder = MiniLM(cache_dir=tmp_path / "empty-data-dir", installed=tmp_path / "image")
    assert embedder.rewritten and embedder._build is None  # nothing to build at start
    assert not (tmp_path / "empty-data-dir").exists()


def test_the_image_command_is_ragchat_serve():
    assert json.loads(last("CMD")) == ["ragchat", "serve"]
    assert not [keyword for keyword, _ in dockerfile() if keyword == "ENTRYPOINT"]


def test_the_image_runs_as_an_unprivileged_user():
    user = last("USER").split(":")[0]
    assert user not in ("root", "0", "")


def test_the_image_never_copies_the_whole_build_context():
    """`COPY . .` would put .env (secrets), .venv and data/ into the image."""
    for keyword, arguments in dockerfile():
        if keyword in ("COPY", "ADD"):
            sources = [a for a in arguments.split()[:-1] if not a.startswith("--")]
            assert "." not in sources and "./" not in sources


def test_the_image_listens_on_all_container_interfaces():
    assert image_env()["APP_BIND"] == "0.0.0.0"


async def run_healthcheck(port: int) -> int:
    command = healthcheck_command()
    assert command[0] == "python"
    result = await trio.run_process(
        [sys.executable, *command[1:]],
        env={"APP_PORT": str(port), "PATH": "/usr/bin:/bin"},
        check=False,
        capture_stdout=True,
        capture_stderr=True,
    )
    return result.returncode


async def test_the_health_check_passes_against_a_healthy_app(api):
    port = int(str(api.base_url).rstrip("/").rsplit(":", 1)[1])
    assert await run_healthcheck(port) == 0


async def test_the_health_check_fails_when_nothing_answers():
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        assert await run_healthcheck(port) != 0
