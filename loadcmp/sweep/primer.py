"""The primer: a few requests before a trial's load, so that a wrong page stops the run.

A 404, a PHP error page or PHP source means the experiment measures the wrong
thing: PrimerError, and the run stops. A server that does not answer at all is
a lab problem (LabError): the trial is recorded as not started and the sweep
goes on. A server kept from the previous level (`reuse_server`) may still be
draining that level's queue, so it gets `patience` seconds first.

With --tls, one handshake first (`handshake`), as the clients make it: the chain must verify against the
run's CA, the version be the highest `tls.protocols` allows, ALPN choose http/1.1 and the certificate's key
be the `tls.key` asked for; what it saw is stored with the label (`records.ServerTls`). An h3 label's
clients shake hands over QUIC: its version, cipher and ALPN are those of one QUIC handshake (`quic`).

With --proto h2 or h2c, the protocol is checked before the load (`negotiate`): ALPN must choose h2, or the
server must answer an h2c preface (prior knowledge) with its SETTINGS. Anything else stops that trial with
one line naming what was negotiated (`wrong_protocol`), so that no run measures HTTP/1.1 as HTTP/2. With
--proto h3 (`quic`): the server's Alt-Svc must advertise h3 on its port, and one QUIC handshake there must
negotiate QUIC v1 and ALPN h3.
"""

from __future__ import annotations

import re
import socket
import ssl
import time

from .. import protocols
from ..lab.certs import key_type_of
from ..lab.fetch import client_context, http_get
from ..lab.www import page_file
from ..lab.render import USER_WWW
from ..errors import LabError, PrimerError, UsageError
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


def handshake(dep: Deployment, patience: float = 0.0, proto: str = protocols.DEFAULT) -> ServerTls | None:
    """With --tls, one handshake with the front role as the label's clients make it (an h2 label's offer h2 first
    by ALPN), checked (PrimerError, one line, when it is not what was asked); None on plain http. LabError when
    the server never answers within `patience`. Whether an h2 label got h2 is `negotiate`'s to say."""
    plan = dep.plan
    if plan.tls is None or plan.cafile is None:
        return None
    name, where, row = dep.stack.name, f"{dep.host.address}:{dep.port}", protocols.get(proto)
    offer = row.tcp_alpn
    deadline, waited = time.monotonic() + patience, time.monotonic()
    while True:
        try:
            version, cipher, alpn, der = _shake(dep.host.address, dep.port, plan.cafile, offer)
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
    if alpn not in offer:
        raise PrimerError(f"{name}: ALPN chose {alpn or 'nothing'}, not {' or '.join(offer)} (the client offers "
                          f"only {', '.join(offer)})")
    if key != plan.tls.key_type:
        raise PrimerError(f"{name}: its certificate has a {key} key, not the {plan.tls.key_type} of tls.key")
    if row.transport == "udp":  # the load shakes hands over QUIC, not over this TCP connection: say what it chose
        version, cipher, alpn = _quic_seen(dep, "/")
    return ServerTls(version=version, cipher=cipher, alpn=alpn, chain_ok=True, key=key)


def _shake(host: str, port: int, cafile: str, offer: tuple[str, ...] = ("http/1.1",)
           ) -> tuple[str, str, str | None, bytes]:
    """One handshake as the clients make it (the run's CA, ALPN `offer`): the version, cipher and ALPN it
    negotiated, and the certificate the server sent (DER)."""
    with socket.create_connection((host, port), timeout=10) as raw, \
            _context(cafile, offer).wrap_socket(raw, server_hostname=host) as s:
        cipher = s.cipher()
        return (s.version() or "", cipher[0] if cipher else "", s.selected_alpn_protocol(),
                s.getpeercert(binary_form=True) or b"")


H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
"""The client's connection preface and an empty SETTINGS frame (RFC 9113 3.4): h2c by prior knowledge."""
SETTINGS = 0x4


def negotiate(dep: Deployment, proto: str) -> str | None:
    """The protocol the server speaks for the one asked: `h2` (ALPN over TLS), `h2c` (its SETTINGS to a
    prior-knowledge preface), or what it spoke instead (`http/1.1`, `nothing`: `wrong_protocol` says it). None
    where nothing is checked here (h1: the handshake's ALPN). h3: `quic`'s PrimerError, one line, when the
    server does not advertise or speak it. LabError: no answer."""
    try:
        return _negotiate(dep, proto)
    except OSError as e:
        raise LabError(f"{dep.stack.name}: no answer to the {proto} check on {dep.host.address}:{dep.port} "
                       f"({e})") from None


def _negotiate(dep: Deployment, proto: str) -> str | None:
    """As the row says the protocol is found: by ALPN (h2), by Alt-Svc and QUIC (h3), by prior knowledge on the
    plain port (h2c); HTTP/1.x is what every server speaks (None)."""
    address, port, cafile, row = dep.host.address, dep.port, dep.plan.cafile, protocols.get(proto)
    if row.alpn_checked and cafile is not None:
        with socket.create_connection((address, port), timeout=10) as raw, \
                _context(cafile, row.tcp_alpn).wrap_socket(raw, server_hostname=address) as s:
            return s.selected_alpn_protocol() or "nothing"
    if row.transport == "udp" and cafile is not None:
        quic(dep, "/")  # Alt-Svc and one QUIC handshake; a server without HTTP/3 stops here in one line
        return row.name
    if row.tls == "refused":
        with socket.create_connection((address, port), timeout=10) as s:
            s.sendall(H2_PREFACE)
            head = _read(s, 9)
        if len(head) == 9 and head[3] == SETTINGS and not int.from_bytes(head[5:9], "big") & 0x7FFFFFFF:
            return row.name
        return "http/1.1" if head.startswith(b"HTTP/") else "nothing"
    return None


def wrong_protocol(dep: Deployment, asked: str, negotiated: str) -> str:
    """A trial stopped for its protocol, in one line: what was asked, what the server spoke, and the last line of
    its log that names the protocol (its reason: a module inactive), quoted."""
    prior = protocols.get(asked).tls == "refused"  # spoken by prior knowledge on the plain port, not by ALPN
    how = f"to an {asked} preface (prior knowledge) it answered" if prior else "ALPN chose"
    return f"{dep.stack.name}: asked for {asked}, {how} {negotiated}{_said(dep, 'http2')}"


def _read(s: socket.socket, n: int) -> bytes:
    """Up to `n` bytes, until the server closes."""
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def _said(dep: Deployment, word: str) -> str:
    """The server's last log line that names the protocol (its reason, e.g. a module inactive), quoted; or ""."""
    lines = [ln.strip() for ln in dep.logs(200).splitlines() if word.lower() in ln.lower()]
    if not lines:
        return ""
    last = lines[-1] if len(lines[-1]) <= 240 else lines[-1][:239].rsplit(" ", 1)[0] + " …"
    return f"; its log says: {last}"


def _context(cafile: str, offer: tuple[str, ...]) -> ssl.SSLContext:
    """The clients' context for this ALPN offer: the shared HTTP/1.1 one (`fetch.client_context`, never changed:
    readiness and the status pages use it), else one of its own."""
    if offer == ("http/1.1",):
        return client_context(cafile)
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols(list(offer))
    return ctx


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


def quic(dep: Deployment, page: str, timeout: float = 10.0) -> str:
    """--proto h3, before the load: the server's https answer must advertise h3 (Alt-Svc) on the port the load
    uses, and one QUIC handshake there must negotiate QUIC v1 and ALPN h3; what it negotiated, else a
    PrimerError in one line."""
    from ..load.h3 import altsvc

    return altsvc.said(_quic_seen(dep, page, timeout))


def _quic_seen(dep: Deployment, page: str, timeout: float = 10.0) -> tuple[str, str, str]:
    """`quic`'s handshake: the (TLS version, cipher, ALPN) it negotiated, else a PrimerError in one line."""
    from ..load.h3 import altsvc
    from ..load.target import TlsOptions, make_target

    name = dep.stack.name
    if dep.plan.cafile is None:
        raise PrimerError(f"{name}: --proto h3 runs over https: add --tls")
    target = make_target(f"https://{dep.host.address}:{dep.port}{page}", tls=TlsOptions(cafile=dep.plan.cafile),
                         proto="h3", resolve=False)
    try:
        found = altsvc.discover(target, timeout)
        if found.port != dep.port:
            raise PrimerError(f"{name}: it advertises HTTP/3 on UDP port {found.port}, not on its https port "
                              f"{dep.port}, where the load goes")
        return altsvc.quic_handshake(found, timeout)
    except UsageError as e:
        raise PrimerError(f"{name}: {e}") from None
