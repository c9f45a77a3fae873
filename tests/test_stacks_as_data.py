"""Stacks are data: a folder each (stack.toml, the parts it names, templates), the user's beside ours."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from loadcmp.cli import cli
from loadcmp.errors import ConfigError, UsageError
from loadcmp.lab import images as img
from loadcmp.lab import render, rules
from loadcmp.lab import stacks as st

OURS = st.configs_dir() / "stacks"


@pytest.fixture(autouse=True)
def no_env_stacks(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("LOADCMP_STACKS", raising=False)
    yield


def copy_stack(src: str, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(OURS / src, dest)
    return dest


def configs(stack: st.Stack) -> dict[str, str]:
    plan = render.render_plan(stack, {}, {r.name: 9000 + i for i, r in enumerate(stack.roles)})
    return plan.config_files()


def test_our_stacks_are_folders_and_python_names_none_of_them() -> None:
    folders = sorted(p.parent.name for p in OURS.glob("*/stack.toml"))
    assert folders and sorted(st.catalog().names()) == folders
    code = "\n".join(p.read_text() for p in (Path(st.__file__).parent).glob("*.py"))
    for name in folders:
        assert f'"{name}"' not in code and f"'{name}'" not in code, name


def test_a_copied_folder_is_a_new_working_stack(tmp_path: Path) -> None:
    mine = copy_stack("nginx", tmp_path / "mine" / "my-nginx")
    cat = st.catalog([str(tmp_path / "mine")])
    assert [s.name for s in cat.own()] == ["my-nginx"]
    s = cat.get("my-nginx")
    assert s.origin == str((tmp_path / "mine").resolve()) and s.home == mine.resolve()
    ours = configs(st.get_stack("nginx"))
    theirs = configs(s)
    assert ours.keys() == theirs.keys()
    assert all(theirs[k] == v.replace("stack nginx;", "stack my-nginx;") for k, v in ours.items())
    assert s.tunables.keys() == st.get_stack("nginx").tunables.keys()


def test_a_template_beside_the_stack_wins_over_the_shared_one(tmp_path: Path) -> None:
    mine = copy_stack("nginx", tmp_path / "tuned")
    shared = (st.configs_dir() / "templates" / "nginx.conf.j2").read_text()
    (mine / "nginx.conf.j2").write_text(shared.replace("server_tokens off;", "server_tokens off;\n    etag off;"))
    cat = st.catalog([str(mine)])
    assert "etag off;" in configs(cat.get("tuned"))["web/nginx.conf"]
    assert "etag off;" not in configs(st.get_stack("nginx"))["web/nginx.conf"]


def test_a_stack_file_with_three_mistakes_lists_all_three_with_lines(tmp_path: Path) -> None:
    bad = copy_stack("apache-prefork", tmp_path / "bad")
    text = (bad / "stack.toml").read_text()
    text = text.replace('parts = ["apache", "prefork", "php", "tls", "h2"]',
                        'parts = ["apache", "prefrok", "php", "tls", "h2"]')
    text = text.replace('command = ["apache-modphp"]', 'command = "apache-modphp"')
    text += '\n[tunables.prefork.Extra]\ndoc = "no default"\n'
    (bad / "stack.toml").write_text(text)
    with pytest.raises(ConfigError) as e:
        st.catalog([str(bad)])
    errors = e.value.messages
    assert len(errors) == 3, errors
    lines = text.splitlines()
    where = {m.split(": ", 1)[0].rsplit(":", 1)[1]: m for m in errors}
    assert all(m.startswith(f"{bad.resolve() / 'stack.toml'}:") for m in errors)
    assert "no part 'prefrok'" in where[str(lines.index('parts = ["apache", "prefrok", "php", "tls", "h2"]') + 1)]
    assert "command must be a non-empty list" in "".join(errors)
    assert "tunable prefork.Extra: it has no default" in "".join(errors)
    with pytest.raises(UsageError):  # and the catalog did not take it
        st.get_stack("bad")
    res = CliRunner().invoke(cli, ["servers", "--stacks", str(bad)])
    assert res.exit_code == 2 and "3 problems" in res.output and "prefrok" in res.output, res.output
    assert "Traceback" not in res.output


def test_busy_limit_is_a_tunable_of_the_stack(tmp_path: Path) -> None:
    """What the report counts busy workers against is data, checked when the folder is read."""
    assert st.get_stack("nginx").busy_limit == "fpm.max_children"
    assert st.get_stack("apache-event").busy_limit == "event.MaxRequestWorkers"
    bad = copy_stack("nginx", tmp_path / "limited")
    text = (bad / "stack.toml").read_text()
    (bad / "stack.toml").write_text(text.replace('busy_limit = "fpm.max_children"',
                                                 'busy_limit = "prefork.MaxRequestWorkers"'))
    with pytest.raises(ConfigError, match="busy_limit: 'prefork.MaxRequestWorkers' is not a tunable of this stack"):
        st.catalog([str(bad)])
    (bad / "stack.toml").write_text(text.replace('busy_limit = "fpm.max_children"',
                                                 'busy_limit = "nginx.worker_processes"'))  # "auto" is no count
    with pytest.raises(ConfigError, match="busy_limit: 'nginx.worker_processes' must be a whole-number tunable"):
        st.catalog([str(bad)])


def test_a_status_pages_scoreboard_and_states_are_checked(tmp_path: Path) -> None:
    """Connections by state are data: a scoreboard's counted columns and each state's words, checked on reading."""
    bad = copy_stack("lighttpd", tmp_path / "states")
    text = (bad / "stack.toml").read_text()
    board = "scoreboard = '^Scoreboard:\\s*(\\S+)'\n"
    assert board in text
    for wrong, says in ((board, "scoreboard and count go together"),
                        ("lighttpd_keepalive = \"k\",", "count must be a table of column"),
                        ('lighttpd_closing = "lighttpd closing" }', "not among its fields or counted columns")):
        mine = {"lighttpd_keepalive = \"k\",": text.replace('lighttpd_keepalive = "k",', 'lighttpd_keepalive = "",'),
                'lighttpd_closing = "lighttpd closing" }': text.replace(
                    'lighttpd_closing = "lighttpd closing" }',
                    'lighttpd_closing = "lighttpd closing", lighttpd_nowhere = "x" }'),
                }.get(wrong) or text.replace(board, "")
        (bad / "stack.toml").write_text(mine)
        with pytest.raises(ConfigError) as e:
            st.catalog([str(bad)])
        assert says in " ".join(e.value.messages), e.value.messages
    (bad / "stack.toml").write_text(text)
    page = next(p for p in st.catalog([str(bad)]).get("states").status if p.kind == "lighttpd")
    assert dict(page.count)["lighttpd_keepalive"] == "k"
    assert dict(page.states)["lighttpd_keepalive"] == "lighttpd idle in keep-alive"


def test_template_mistakes_name_the_template_and_line(tmp_path: Path) -> None:
    mine = copy_stack("nginx", tmp_path / "broken-tmpl")
    (mine / "nginx.conf.j2").write_text("events {\n  worker_connections {{ nginx.worker_connections }};\n"
                                         "{% if %}\n}\n")
    with pytest.raises(ConfigError) as e:
        st.catalog([str(mine)])
    assert any("nginx.conf.j2:3:" in m for m in e.value.messages), e.value.messages
    (mine / "nginx.conf.j2").write_text("worker_processes {{ nginx.no_such_setting }};\n")
    with pytest.raises(ConfigError) as e:
        st.catalog([str(mine)])
    assert "no_such_setting" in str(e.value.messages)


def test_bad_stack_folders_are_one_line_usage_errors(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["servers", "--stacks", str(tmp_path / "nowhere")])
    assert res.exit_code == 2 and "--stacks" in res.output and "no such folder" in res.output
    (tmp_path / "empty").mkdir()
    res = CliRunner().invoke(cli, ["servers", "--stacks", str(tmp_path / "empty")])
    assert res.exit_code == 2 and "no stack.toml" in res.output
    copy_stack("nginx", tmp_path / "clash" / "nginx")
    res = CliRunner().invoke(cli, ["servers", "--stacks", str(tmp_path / "clash")])
    assert res.exit_code == 2 and "exists already" in res.output and "rename" in res.output


def test_servers_lists_the_users_stacks_with_where_they_came_from(tmp_path: Path) -> None:
    import json

    copy_stack("apache-event", tmp_path / "lab" / "event-big")
    res = CliRunner().invoke(cli, ["servers", "--json", "--stacks", str(tmp_path / "lab")])
    assert res.exit_code == 0, res.output
    doc = {s["name"]: s for s in json.loads(res.output)["servers"]}
    assert doc["event-big"]["from"] == str((tmp_path / "lab").resolve())
    assert doc["nginx"]["from"] == "built-in"
    assert doc["event-big"]["tunable_sections"] == ["apache", "event", "fpm", "php", "tls", "h2"]


def test_env_and_experiment_files_add_stacks_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from loadcmp.experiment.spec import load_experiment

    copy_stack("nginx", tmp_path / "envstacks" / "env-nginx")
    monkeypatch.setenv("LOADCMP_STACKS", str(tmp_path / "envstacks"))
    assert st.get_stack("env-nginx").origin == str((tmp_path / "envstacks").resolve())
    copy_stack("nginx", tmp_path / "exp" / "stacks" / "file-nginx")
    f = tmp_path / "exp" / "e.toml"
    f.write_text('stacks = ["stacks"]\nservers = ["file-nginx"]\n[variants.big]\nstack = "file-nginx"\n'
                 'set = { "nginx.worker_connections" = 4000 }\n')
    fields, _ = load_experiment(f)
    assert fields["stack_dirs"] == (str((tmp_path / "exp" / "stacks").resolve()),)
    assert fields["servers"] == ("file-nginx",) and fields["stacks"] == {"big": "file-nginx"}


def test_a_stack_with_its_own_dockerfile_builds_from_its_folder(tmp_path: Path) -> None:
    mine = copy_stack("nginx", tmp_path / "own")
    shutil.copy(st.project_root() / "Dockerfile.nginx", mine / "Dockerfile")
    shutil.copy(st.configs_dir() / "entrypoint.sh", mine / "entrypoint.sh")
    text = (mine / "stack.toml").read_text().replace('image = "nginx"', 'dockerfile = "Dockerfile"')
    (mine / "stack.toml").write_text(text)
    (mine / "notes.j2").write_text("not built in")
    s = st.catalog([str(mine)]).own()[0]
    image = s.front.image
    assert image.key == "stack-own" and image.home == mine.resolve()
    names = [n for n, _ in img._context_files(image)]
    assert names[0] == "Dockerfile" and "entrypoint.sh" in names and "www/index.html" in names
    assert "stack.toml" not in names and "notes.j2" not in names
    before = img.image_tag(image, "base")
    (mine / "entrypoint.sh").write_text("#!/bin/sh\nexit 0\n")
    assert img.image_tag(image, "base") != before  # its own files are inputs of its tag


def test_checks_are_data_and_cannot_run_code() -> None:
    with pytest.raises(ConfigError) as e:
        st.effective_settings(st.get_stack("apache-event"), {"event.MaxRequestWorkers": 1000,
                                                             "event.ThreadsPerChild": 30})
    assert "event.MaxRequestWorkers (1000) exceeds ServerLimit x ThreadsPerChild (480)" in str(e.value)
    assert "must be a multiple of ThreadsPerChild (30)" in str(e.value)
    for evil in ("__import__('os').system('true')", "open('/etc/passwd')", "(lambda: 1)()", "2 ** 100"):
        with pytest.raises(rules.RuleError):
            rules.parse(evil)
    tree = rules.parse('a.b != "x" or a.c <= a.d * 2 <= a.e')
    assert rules.names(tree) == {"a.b", "a.c", "a.d", "a.e"}
    assert rules.evaluate(tree, {"a.b": "x", "a.c": 1, "a.d": 2, "a.e": 4}) is True
    assert rules.evaluate(tree, {"a.b": "x", "a.c": 5, "a.d": 2, "a.e": 4}) is False


@pytest.mark.parametrize("args, said", [
    (["--server", "caddy", "--set", "h2.max_concurrent_streams=100"],
     "error: caddy: its Caddyfile cannot set HTTP/2's concurrent streams"),
    (["--server", "fast=caddy", "--set", "fast:h2.max_workers=3"], "error: fast: Go serves each h2 stream"),
    (["--server", "nginx", "--set", "h2.max_workers=3"], "error: nginx: it serves h2 streams in its event loop"),
    (["--server", "nginx", "--set", "fpm.max_children=2"],
     "error: nginx: fpm: max_spare_servers (3) exceeds max_children (2): add --set fpm.max_spare_servers=2, "
     "or --set fpm.pm=static"),
])
def test_a_refused_setting_names_its_server_once_and_says_the_fix(args: list[str], said: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The label is put before a check's words where they are shown: the words do not name the stack again
    ("caddy: caddy: ..."); where the fix is plain, they give it."""
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/loadcmp-test-docker.sock")
    res = CliRunner().invoke(cli, ["run", *args, "-t", "1"])
    assert res.exit_code == 2 and res.output.strip().startswith(said), res.output
    for command in (["run", "-t", "1"], ["up"]):
        assert "caddy: caddy" not in CliRunner().invoke(cli, [*command, "--server", "caddy", "--set",
                                                           "h2.max_workers=3"]).output


def test_the_suggested_fpm_fix_is_accepted() -> None:
    vals = st.effective_settings(st.get_stack("nginx"), {"fpm.max_children": 2, "fpm.max_spare_servers": 2})
    assert vals["fpm.max_children"] == vals["fpm.max_spare_servers"] == 2
    assert st.effective_settings(st.get_stack("nginx"), {"fpm.max_children": 2, "fpm.pm": "static"})


def test_no_stack_check_names_its_own_stack_first() -> None:
    """A stack's `says` follows its label on the console; beginning with the stack's name would say it twice."""
    for stack in st.catalog():
        for c in stack.checks:
            assert not c.says.lower().startswith((f"{stack.name}:", f"{stack.name} ")), (stack.name, c.says)


def test_a_key_a_stacks_checks_keep_at_its_default_is_listed_as_fixed_on_it(tmp_path: Path) -> None:
    """`servers --tunables` reads who takes a key from the stack files' checks: a user's stack that pins one is
    named among those that keep it fixed, not among those that take it."""
    import json

    mine = copy_stack("nginx", tmp_path / "pinned")
    with (mine / "stack.toml").open("a") as f:
        f.write('\n[[checks]]\nrule = "h2.max_concurrent_streams == 128"\nsays = "it keeps 128 streams"\n')
    assert st.catalog([str(mine)]).get("pinned").fixes("h2.max_concurrent_streams")
    assert not st.get_stack("nginx").fixes("h2.max_concurrent_streams")
    res = CliRunner().invoke(cli, ["servers", "--tunables", "--json", "--stacks", str(mine)])
    row = json.loads(res.stdout)["tunables"]["h2.max_concurrent_streams"]
    assert "pinned" in row["fixed"] and "pinned" not in row["stacks"] and "nginx" in row["stacks"]


def test_a_check_that_reads_an_unknown_setting_is_found_when_read(tmp_path: Path) -> None:
    mine = copy_stack("nginx", tmp_path / "checked")
    with (mine / "stack.toml").open("a") as f:
        f.write('\n[[checks]]\nrule = "nginx.worker_connections >= nginx.workers"\nsays = "too few"\n')
    with pytest.raises(ConfigError) as e:
        st.catalog([str(mine)])
    assert "nginx.workers" in str(e.value) and "not tunables of stack checked" in str(e.value)


# --- with Docker: a copied stack runs, the user's pages are served by every stack ---------------------------------


TOKEN_PHP = '<?php header("Content-Type: text/plain"); echo "token-", intdiv(6 * 7, 1), "-", PHP_SAPI, "\\n";\n'


@pytest.mark.docker
def test_a_copied_stack_runs_through_stacks_and_user_pages_are_measured(tmp_path: Path, images: dict[str, str],
                                                                         docker_client: object) -> None:
    import json

    from loadcmp.lab import cleanup

    copy_stack("nginx", tmp_path / "mine" / "copied-nginx")
    site = tmp_path / "site"
    site.mkdir()
    (site / "token.php").write_text(TOKEN_PHP)
    (site / "hello.txt").write_text("hello from the user's site\n")
    res = CliRunner().invoke(cli, ["run", "--stacks", str(tmp_path / "mine"), "--server", "copied-nginx",
                                   "--www", str(site), "--page", "/token.php", "-c", "4", "-t", "1s", "--warmup", "0",
                                   "--out", str(tmp_path / "results"), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    (result,) = doc["results"]
    assert result["server"] == "copied-nginx" and result["ok"] > 0 and result["failed"] == 0
    run = json.loads(next((tmp_path / "results").glob("*/run.json")).read_text())
    assert run["spec"]["stack_dirs"] == [str((tmp_path / "mine").resolve())]
    assert run["www"]["path"] == str(site.resolve()) and run["www"]["files"] == 2 and len(run["www"]["sha256"]) == 64
    assert cleanup.labelled(docker_client) == []


@pytest.mark.docker
def test_every_stack_serves_the_users_pages_read_only(tmp_path: Path, images: dict[str, str],
                                                      docker_client: object) -> None:
    import json

    from loadcmp.lab import cleanup
    from loadcmp.lab.fetch import http_get

    site = tmp_path / "site"
    (site / "sub").mkdir(parents=True)
    (site / "sub" / "token.php").write_text(TOKEN_PHP)
    (site / "plain.txt").write_text("plain\n")
    served = []
    try:
        for name in st.catalog().names():
            res = CliRunner().invoke(cli, ["up", "--server", name, "--www", str(site), "--json"])
            assert res.exit_code == 0, (name, res.output)
            port = int(json.loads(res.stdout)["url"].rsplit(":", 1)[1].strip("/"))
            code, body = http_get(port, "/sub/token.php", timeout=10)
            assert code == 200 and body.startswith(b"token-42-"), (name, code, body[:200])
            assert http_get(port, "/plain.txt", timeout=10) == (200, b"plain\n"), name
            assert http_get(port, "/index.html", timeout=10)[0] == 404, name  # not the demo pages
            served.append(name)
            assert CliRunner().invoke(cli, ["down"]).exit_code == 0
    finally:
        CliRunner().invoke(cli, ["down"])
    assert served == st.catalog().names()
    assert cleanup.labelled(docker_client) == []


def test_bad_user_pages_are_refused_before_anything_starts(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "--www", str(tmp_path / "none"), "-c", "1", "-t", "1s"])
    assert res.exit_code == 2 and "no such folder" in res.output
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.php").write_text(TOKEN_PHP)
    res = CliRunner().invoke(cli, ["run", "--server", "nginx", "--www", str(site), "--page", "/b.php", "-c", "1",
                                   "-t", "1s"])
    assert res.exit_code == 2 and "page '/b.php' is not in --www" in res.output, res.output
    assert "Traceback" not in res.output


def test_what_a_shared_stack_folder_cannot_do(tmp_path: Path) -> None:
    """Templates run sandboxed; arithmetic in them, bad kinds, broken defaults and reserved names are one line each."""
    mine = copy_stack("nginx", tmp_path / "evil")
    (mine / "nginx.conf.j2").write_text("{{ cycler.__init__.__globals__.os.getpid() }}\n")
    with pytest.raises(ConfigError) as e:
        st.catalog([str(mine)])
    assert "nginx.conf.j2" in str(e.value.messages)
    (mine / "nginx.conf.j2").write_text("x {{ 1 // 0 }}\n")
    with pytest.raises(ConfigError, match="ZeroDivisionError"):
        st.catalog([str(mine)])
    (mine / "nginx.conf.j2").unlink()
    text = (mine / "stack.toml").read_text()
    (mine / "stack.toml").write_text(text + """
[tunables.www.x]
default = 1
[[checks]]
rule = "nginx.worker_connections > 100000"
says = "too few"
[[causes]]
key = "evil.x"
pattern = "x"
phrase = "x"
kinds = [[1]]
""")
    with pytest.raises(ConfigError) as e:
        st.catalog([str(mine)])
    said = " | ".join(e.value.messages)
    assert "www is a name the templates use" in said and "kinds must be a list" in said, said
    fixed = (mine / "stack.toml").read_text().replace("[tunables.www.x]\ndefault = 1\n", "")
    (mine / "stack.toml").write_text(fixed.replace("kinds = [[1]]", "kinds = []"))
    with pytest.raises(ConfigError, match="its defaults break its own check: too few"):
        st.catalog([str(mine)])


def test_the_same_folder_twice_is_one_stack_and_names_stay_apart(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    copy_stack("nginx", tmp_path / "lab" / "twice")
    monkeypatch.setenv("LOADCMP_STACKS", str(tmp_path / "lab"))
    assert [s.name for s in st.catalog([str(tmp_path / "lab"), str(tmp_path / "lab" / "twice")]).own()] == ["twice"]
    copy_stack("nginx", tmp_path / "alias" / "apache")
    with pytest.raises(ConfigError, match="another name of the stack 'apache-prefork'"):
        st.catalog([str(tmp_path / "alias")])
    copy_stack("nginx", tmp_path / "every" / "all")
    with pytest.raises(ConfigError, match="not 'all'"):
        st.catalog([str(tmp_path / "every" / "all")])


def test_two_specs_in_one_process_see_only_their_own_stacks(tmp_path: Path) -> None:
    """The catalog is a value a spec holds (its `stack_dirs`): reading one spec's stacks adds them to no other."""
    from loadcmp.experiment.spec import RunSpec, load_experiment, validate

    copy_stack("nginx", tmp_path / "a" / "alpha")
    copy_stack("nginx", tmp_path / "b" / "beta")
    (tmp_path / "a" / "e.toml").write_text('stacks = ["."]\nservers = ["alpha"]\n')
    fields, _ = load_experiment(tmp_path / "a" / "e.toml")
    one = validate(RunSpec(**fields))
    two = validate(RunSpec(servers=("beta",), stack_dirs=(str(tmp_path / "b"),)))
    assert one.stacks == {"alpha": "alpha"} and two.stacks == {"beta": "beta"}
    assert "alpha" in one.catalog() and "beta" not in one.catalog()
    assert "beta" in two.catalog() and "alpha" not in two.catalog()
    assert "alpha" not in st.catalog() and "beta" not in st.catalog()  # nor does the process's own
    with pytest.raises(UsageError, match="unknown server 'alpha'"):
        validate(RunSpec(servers=("alpha",), stack_dirs=(str(tmp_path / "b"),)))
    with pytest.raises(UsageError, match="unknown server 'beta'"):
        st.get_stack("beta")
    res = CliRunner().invoke(cli, ["servers", "--json"])
    assert res.exit_code == 0 and "alpha" not in res.output and "beta" not in res.output


def test_smoke_finds_a_stack_of_its_files_folders_by_label(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """`smoke FILE --server LABEL=STACK` for a stack in the file's own `stacks` folders: the flag is read
    against the file's stacks too (nothing starts: the sweep is where the spec is seen)."""
    import loadcmp.cli.smoke as smoke_cli
    from click.testing import CliRunner

    from loadcmp.cli import cli

    copy_stack("nginx", tmp_path / "exp" / "stacks" / "file-nginx")
    f = tmp_path / "exp" / "e.toml"
    f.write_text('stacks = ["stacks"]\n[smoke]\nchecks = ["rps>1"]\n')
    seen = {}

    class Seen(Exception):
        pass

    def sweep(spec, **_):  # type: ignore[no-untyped-def]
        seen["spec"] = spec
        raise Seen

    monkeypatch.setattr(smoke_cli, "sweep", sweep)
    res = CliRunner().invoke(cli, ["smoke", str(f), "--server", "mine=file-nginx", "-c", "1", "-t", "1"])
    assert isinstance(res.exception, Seen), res.output
    spec = seen["spec"]
    assert spec.servers == ("mine",) and spec.stacks == {"mine": "file-nginx"}
