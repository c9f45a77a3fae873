"""The primer: a few requests before a trial's load, so that a wrong page stops the run.

A 404, a PHP error page or PHP source means the experiment measures the wrong
thing: PrimerError, and the run stops. A server that does not answer at all is
a lab problem (LabError): the trial is recorded as not started and the sweep
goes on. A server kept from the previous level (`reuse_server`) may still be
draining that level's queue, so it gets `patience` seconds first.

With --tls, one handshake first (`handshake`), as the clients make it: the chain must verify against the
run's CA, the version be the highest `tls.protocols` allows, ALPN choose http/1.1 and the certificate's key
be the `tls.key` asked for; what it saw is stored with the label (`records.ServerTls`).
"""

from __future__ import annotations

import re
import socket
import ssl
import time

from ..lab.certs import key_type_of
from ..lab.pages import client_context, http_get, page_file
from ..lab.render import USER_WWW
from ..errors import LabError, PrimerError
from ..lab.containers import Deployment
from ..records import ServerTls

PHP_ERRORS = ("Fatal error", "Parse error", "Warning</b>:", "Uncaught ")

LOGGED_ERROR = re.compile(r"(?:\.(?:ERROR|CRITICAL|ALERT|EMERGENCY)|PHP (?:Fatal|Parse) error|Fatal error):\s*(.+)")
"""An error line a PHP application leaves in the server's log: Monolog's (`app.ERROR: ...`) or PHP's own."""

KEPT_PATIENCE_S = 60.0
"""How long a server kept from the previous level may take to answer again."""


def prime(dep: Deployment, page: str, n: int = 3, patience: float = 0.0, exact: bool = False) -> None:
    """A few requests; the response must be the page, not an error page. `exact` (a mix's pages): an app's page
    is checked for its text only when the path is that page's own (`/?s=x` is not the front page `/`)."""
    deadline = time.monotonic() + patience
    for _ in range(n):
        code, body = _get(dep, page, deadline)
        text = body[:200000].decode(errors="replace")
        app = dep.plan.app
        app_page = app.page_for(page) if app else None
        if exact and app_page is not None and app_page.path != page.split("#", 1)[0]:
            app_page = None
        if code >= 400:
            raise PrimerError(_not_the_page(dep, page, code))
        if page.split("?")[0].endswith(".php"):
            if "<?php" in text:
                raise PrimerError(f"{dep.stack.name}: GET {page} returned PHP source: PHP is not executing")
            bad = next((m for m in PHP_ERRORS if m in text), None)
            if bad:
                raise PrimerError(f"{dep.stack.name}: GET {page} returned a PHP error page ({bad.strip('<>/b:')})")
        if not body:
            raise PrimerError(f"{dep.stack.name}: GET {page} returned an empty body")
        if app and app_page and app_page.expect not in text:
            raise PrimerError(f"{dep.stack.name}: GET {page} did not contain {app_page.expect!r}, which the app "
                              f"{app.name}'s page {app_page.name!r} holds (another page, or the app broken)")
        _check_static(dep, page, body)


def _not_the_page(dep: Deployment, page: str, code: int) -> str:
    """An error status in one line: the error the app or PHP logged for it, quoted; a page of the user's
    (--www) that exists is said to exist, so that a broken page does not read as a wrong path."""
    said = f"{dep.stack.name}: GET {page} answered HTTP {code}, not the page"
    app = dep.plan.app
    logged = _logged_error(dep) if app or code >= 500 else ""
    if app:
        return said + (f"; the app {app.name} logged: {logged}" if logged else "; check --page")
    www = dep.plan.www
    found = page_file(www, page) if www else None
    if found is None:
        return said + (f"; the server logged: {logged}" if logged else "; check --page")
    if code < 500:  # the file is there, the server does not serve it: its root is not the pages
        return said + f"; the page {found} exists: is the server's root {USER_WWW}, where --www is?"
    return said + (f"; the page {found} exists, and PHP logged: {logged}" if logged else
                   f"; the page {found} exists, but nothing in the server's log says why")


def _logged_error(dep: Deployment, width: int = 240) -> str:
    """The last error line the app or PHP left in its containers' logs, its message only (no stack trace, no
    context: Monolog's JSON, nginx's `" while reading response header ...`, the quote php-fpm or Apache put
    round it), or "" when there is none."""
    found = ""
    for line in dep.logs(200).splitlines():
        m = LOGGED_ERROR.search(line)
        if m:
            found = m.group(1).split(' {"', 1)[0].split('" while ', 1)[0].strip()
            if found[-1:] in ("'", '"') and found.count(found[-1]) % 2:  # the close of a quote the server put round
                found = found[:-1]
    return found if len(found) <= width else found[: width - 1].rsplit(" ", 1)[0] + " …"


def _check_static(dep: Deployment, page: str, body: bytes) -> None:
    """With the user's pages (--www), a static file must come back byte for byte: another site's
    page, a default page or a rewrite would be measured instead."""
    www = dep.plan.www
    f = page_file(www, page) if www else None
    if f is None or f.suffix == ".php":
        return
    if body != f.read_bytes():
        raise PrimerError(f"{dep.stack.name}: GET {page} did not return {f} byte for byte "
                          f"({len(body):,} bytes, the file has {f.stat().st_size:,}); is the stack's root the pages?")


def handshake(dep: Deployment, patience: float = 0.0) -> ServerTls | None:
    """With --tls, one handshake with the front role, checked (PrimerError, one line, when it is not what was
    asked); None on plain http. LabError when the server never answers within `patience`."""
    plan = dep.plan
    if plan.tls is None or plan.cafile is None:
        return None
    name, where = dep.stack.name, f"{dep.host.address}:{dep.port}"
    deadline, waited = time.monotonic() + patience, time.monotonic()
    while True:
        try:
            version, cipher, alpn, der = _shake(dep.host.address, dep.port, plan.cafile)
            break
        except ssl.SSLCertVerificationError as e:
            raise PrimerError(f"{name}: its certificate on {where} did not verify against the run's CA "
                              f"({e.verify_message})") from None
        except ssl.SSLError as e:
            raise PrimerError(f"{name}: no TLS handshake on {where} ({e.reason or e}): does its front role "
                              "render the part tls's lines?") from None
        except OSError as e:
            if time.monotonic() >= deadline:
                after = f" after {time.monotonic() - waited:.0f} s of tries" if patience >= 1 else ""
                raise LabError(f"{name}: no TLS handshake on {where} before the load{after} ({e})") from None
            time.sleep(1.0)
    versions = str(plan.settings.get("tls.protocols", "1.2,1.3")).split(",")  # a user's own file (--config): theirs
    key = key_type_of(der)
    if version != f"TLSv{max(versions)}" and "tls.protocols" in plan.settings:
        raise PrimerError(f"{name}: the handshake gave {version}, but tls.protocols={','.join(versions)} "
                          f"and the client offers TLSv1.3")
    if alpn != "http/1.1":
        raise PrimerError(f"{name}: ALPN chose {alpn or 'nothing'}, not http/1.1 (the client offers only http/1.1)")
    if key != plan.tls.key_type:
        raise PrimerError(f"{name}: its certificate has a {key} key, not the {plan.tls.key_type} of tls.key")
    return ServerTls(version=version, cipher=cipher, alpn=alpn, chain_ok=True, key=key)


def _shake(host: str, port: int, cafile: str) -> tuple[str, str, str | None, bytes]:
    """One handshake as the clients make it (the run's CA, ALPN http/1.1): the version, cipher and ALPN it
    negotiated, and the certificate the server sent (DER)."""
    with socket.create_connection((host, port), timeout=10) as raw, \
            client_context(cafile).wrap_socket(raw, server_hostname=host) as s:
        cipher = s.cipher()
        return (s.version() or "", cipher[0] if cipher else "", s.selected_alpn_protocol(),
                s.getpeercert(binary_form=True) or b"")


def _get(dep: Deployment, page: str, deadline: float) -> tuple[int, bytes]:
    """One GET, tried again each second until `deadline`; LabError if the server never answers."""
    waited = time.monotonic()
    while True:
        try:
            return http_get(dep.port, page, timeout=10, host=dep.host.address, cafile=dep.plan.cafile)
        except OSError as e:
            if time.monotonic() >= deadline:
                waited_s = time.monotonic() - waited
                after = f" after {waited_s:.0f} s of tries" if waited_s >= 1 else ""
                raise LabError(f"{dep.stack.name}: GET {page} got no answer before the load{after} ({e})") from None
            time.sleep(1.0)
