"""The stack catalog, config rendering, --set overrides (loadcmp.lab.stacks)."""

from __future__ import annotations

import pytest

from loadcmp.lab import render as rendering
from loadcmp.lab.certs import STAND_IN
from loadcmp.lab import stacks as st
from loadcmp.errors import ConfigError, UsageError


def test_catalog_has_the_seven_stacks_and_alias():
    assert st.catalog().names() == ["nginx", "apache-prefork", "apache-worker", "apache-event", "nginx-apache", "caddy",
                                "lighttpd"]
    assert st.get_stack("apache").name == "apache-prefork"
    assert st.get_stack("nginx-apache").php_api == "Apache 2.0 Handler"
    assert st.get_stack("apache-event").php_api == "FPM/FastCGI"
    assert [s.name for s in st.catalog().resolve(["all"])] == st.catalog().names()


def test_unknown_server_lists_valid_ones():
    with pytest.raises(UsageError) as e:
        st.get_stack("tomcat")
    assert "apache-event" in str(e.value) and "nginx" in str(e.value)


def render(name, overrides=None, port=8080, https=None):
    stack = st.get_stack(name)
    ports = {r.name: port + i for i, r in enumerate(reversed(stack.roles))}
    return rendering.render(stack, st.effective_settings(stack, overrides or {}), ports, https=https)


def test_prefork_render_with_override():
    (r,) = render("apache-prefork", st.parse_overrides(["prefork.MaxRequestWorkers=200"]))
    conf = r.files["apache2.conf"]
    assert "Listen 127.0.0.1:8080" in conf
    assert "mod_mpm_prefork.so" in conf and "libphp8.2.so" in conf
    assert "MaxRequestWorkers 200" in conf and "KeepAlive On" in conf
    assert "Require ip 127.0.0.1" in conf


@pytest.mark.parametrize("name, mpm", [("apache-worker", "worker"), ("apache-event", "event")])
def test_threaded_mpms_use_fpm(name, mpm):
    (r,) = render(name)
    conf = r.files["apache2.conf"]
    assert f"mod_mpm_{mpm}.so" in conf and "proxy_fcgi" in conf and "libphp" not in conf
    assert "pm.max_children = 5" in r.files["php-fpm.conf"]


def test_nginx_and_proxy_render():
    (r,) = render("nginx", st.parse_overrides(["nginx.worker_connections=4096", "fpm.max_children=20"]))
    assert "worker_connections 4096;" in r.files["nginx.conf"]
    assert "listen 127.0.0.1:8080" in r.files["nginx.conf"]
    assert "stub_status" in r.files["nginx.conf"]
    assert "pm.max_children = 20" in r.files["php-fpm.conf"]
    backend, front = render("nginx-apache")
    assert backend.role.name == "backend" and front.role.name == "web"
    assert f"server 127.0.0.1:{backend.port};" in front.files["nginx.conf"]
    assert "Listen 127.0.0.1:" in backend.files["apache2.conf"]


@pytest.mark.parametrize(
    "items, needle",
    [
        (["prefork.MaxRequestWorker=5"], "unknown setting"),
        (["nope"], "KEY=VALUE"),
        (["prefork.MaxRequestWorkers=lots"], "whole number"),
        (["fpm.pm=sometimes"], "one of"),
        (["apache.KeepAlive=maybe"], "on/off"),
        (["prefork.MaxRequestWorkers=0"], "outside"),
    ],
)
def test_bad_overrides(items, needle):
    with pytest.raises(ConfigError) as e:
        st.parse_overrides(items)
    assert needle in str(e.value)


def test_inconsistent_settings_are_refused():
    stack = st.get_stack("apache-prefork")
    with pytest.raises(ConfigError) as e:
        st.effective_settings(stack, st.parse_overrides(["prefork.MaxRequestWorkers=1000"]))
    assert "ServerLimit" in str(e.value)
    stack = st.get_stack("apache-event")
    with pytest.raises(ConfigError):
        st.effective_settings(stack, st.parse_overrides(["event.MaxRequestWorkers=1000"]))


def test_every_tunable_is_documented_and_changes_a_config():
    names = {k.split(".")[0] for k in st.tunables()}
    assert names == {"apache", "prefork", "worker", "event", "nginx", "fpm", "php", "proxy", "caddy", "lighttpd", "tls",
                     "h2"}
    others = {"nginx.worker_processes": "2", "tls.ciphers": "ECDHE-ECDSA-AES128-GCM-SHA256", "tls.groups": "X25519"}
    for key, t in st.tunables().items():
        assert t.doc, key
        if key == "tls.key":
            continue  # it changes the certificate, not a config (test_tls_stacks.py)
        # h2's: Apache's mod_http2 takes every one (the others refuse those their server cannot set)
        stack = st.get_stack("apache-event") if key.startswith("h2.") else next(s for s in st.catalog()
                                                                                  if key in s.tunables)
        https = STAND_IN if key.startswith("tls.") else None  # its lines are rendered with --tls only
        base = render(stack.name, https=https)
        d = t.default
        if isinstance(d, bool):
            candidates = [not d]
        elif isinstance(d, int):
            candidates = [c for c in (d * 2, d + 25, d + 1, 1) if c != d]
        elif t.choices:
            candidates = [c for c in t.choices if c != d]
        else:
            candidates = [others.get(key, "256M")]
        for c in candidates:
            try:
                changed = render(stack.name, {key: t.parse(c)}, https=https)
            except ConfigError:
                continue
            assert [r.files for r in changed] != [r.files for r in base], key
            break
        else:
            pytest.fail(f"no valid other value for {key}")



def test_a_stack_says_how_its_server_handles_connections_in_its_data():
    """`workers` comes from a role's vars (Apache's MPM here); a stack whose roles say nothing has none."""
    names = ("apache-prefork", "apache-worker", "apache-event", "nginx-apache")
    assert {n: st.get_stack(n).workers for n in names} == {
        "apache-prefork": "prefork", "apache-worker": "worker", "apache-event": "event", "nginx-apache": "prefork"}
    assert st.get_stack("nginx").workers is None
