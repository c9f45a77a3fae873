"""A certificate authority made per run, and the server certificates it issues for 127.0.0.1 and localhost.

With `--tls` each run makes its own CA (an ECDSA P-256 key, valid for a few days) and, for each key type a
server asks for (`tls.key`), one server certificate signed by it. The clients verify against that CA, so no
`--insecure` is needed inside a run and no CA of the system is touched. The CA's certificate is written where
the run keeps its results (`tls/ca.pem`); its key stays in this process and is never written. The server's
certificate and key go into the front container with its rendered configs (`archives`), never into run.json.

trustme makes only RSA 2048 and ECDSA P-256 keys; RSA 4096 is asked for too, so `cryptography` makes them all.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ..errors import ConfigError

KEY_TYPES = ("ecdsa-p256", "rsa-2048", "rsa-4096")
"""The key types loadcmp can issue (the part `tls`'s `tls.key` choices; a stack may take fewer)."""
CA_FILE = "tls/ca.pem"
"""Where the CA's certificate is, under a run's results folder."""
CERT = "tls/server.pem"
KEY = "tls/server.key"
"""Where the server's certificate and key are, under /etc/loadcmp in the front container."""
NAMES = ("localhost",)
ADDRESSES = ("127.0.0.1",)
VALID = datetime.timedelta(days=7)

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def new_key(key_type: str) -> PrivateKey:
    """A private key of one of KEY_TYPES; ConfigError for any other."""
    if key_type == "ecdsa-p256":
        return ec.generate_private_key(ec.SECP256R1())
    if key_type in ("rsa-2048", "rsa-4096"):
        return rsa.generate_private_key(public_exponent=65537, key_size=int(key_type.split("-")[1]))
    raise ConfigError(f"tls.key: loadcmp cannot issue a {key_type!r} certificate (it makes {', '.join(KEY_TYPES)})")


@dataclass(frozen=True)
class Issued:
    """A server certificate and its key, as the front container gets them."""

    key_type: str
    cert_pem: bytes = field(repr=False)
    key_pem: bytes = field(repr=False)
    cafile: str
    """The CA file that verifies it (the run's `tls/ca.pem`)."""

    def files(self) -> dict[str, bytes]:
        """What is copied into /etc/loadcmp beside the rendered configs."""
        return {CERT: self.cert_pem, KEY: self.key_pem}

    def template_vars(self) -> dict[str, Any]:
        """What templates see as `https`: where the certificate and the key are, and the key's type."""
        return {"cert": f"/etc/loadcmp/{CERT}", "key": f"/etc/loadcmp/{KEY}", "key_type": self.key_type}


STAND_IN = Issued("ecdsa-p256", b"", b"", "")
"""A certificate's place only, for rendering a stack's templates once when it is read (`stackfile`)."""


def key_type_of(der: bytes) -> str:
    """A certificate's key type in KEY_TYPES' words (the one a server sent), else what it is."""
    key = x509.load_der_x509_certificate(der).public_key()
    if isinstance(key, ec.EllipticCurvePublicKey):
        return "ecdsa-p256" if key.curve.name == "secp256r1" else f"ecdsa-{key.curve.name}"
    if isinstance(key, rsa.RSAPublicKey):
        return f"rsa-{key.key_size}"
    return type(key).__name__


class RunCA:
    """The run's certificate authority: made once, it issues one server certificate per key type."""

    def __init__(self, folder: Path, keep: bool = False) -> None:
        """Make the CA and write its certificate to `folder`/tls/ca.pem (the results folder); `keep` (a resumed
        run): a ca.pem already there is kept and this CA added to it, so the file verifies the earlier trials'
        certificates and the new ones (the CA's key is never stored, so a resumed run cannot reuse the CA)."""
        self._key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "loadcmp"),
                          x509.NameAttribute(NameOID.COMMON_NAME, "loadcmp run CA")])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (
            x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(self._key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + VALID)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        path = folder / CA_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        kept = path.read_bytes() if keep and path.is_file() else b""
        path.write_bytes(kept + self.cert.public_bytes(serialization.Encoding.PEM))
        self.cafile = str(path.resolve())
        self._issued: dict[tuple[str, tuple[str, ...]], Issued] = {}

    def issue(self, key_type: str, hosts: tuple[str, ...] = ()) -> Issued:
        """The server certificate for 127.0.0.1 and localhost, and for `hosts` (another engine's address and
        name, where the clients connect), with a key of `key_type` (made once per type and hosts)."""
        if (key_type, hosts) not in self._issued:
            self._issued[(key_type, hosts)] = self._make(key_type, hosts)
        return self._issued[(key_type, hosts)]

    def for_hosts(self, *hosts: str) -> HostIssuer:
        """This CA issuing for these hosts too (`planning.plan_deployment` on another machine's engine)."""
        return HostIssuer(self, tuple(dict.fromkeys(h for h in hosts if h)))

    def _make(self, key_type: str, hosts: tuple[str, ...] = ()) -> Issued:
        key = new_key(key_type)
        now = datetime.datetime.now(datetime.timezone.utc)
        names: list[x509.GeneralName] = [x509.DNSName(n) for n in NAMES]
        names += [x509.IPAddress(ipaddress.ip_address(a)) for a in ADDRESSES]
        for h in hosts:
            if h in NAMES or h in ADDRESSES:
                continue
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(h)))
            except ValueError:
                names.append(x509.DNSName(h))
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, NAMES[0])]))
            .issuer_name(self.cert.subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + VALID)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self._key.public_key()), critical=False)
            .sign(self._key, hashes.SHA256())
        )
        key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption())
        return Issued(key_type, cert.public_bytes(serialization.Encoding.PEM), key_pem, self.cafile)


@dataclass(frozen=True)
class HostIssuer:
    """The run's CA issuing for a host beside loopback: the clients of another machine's engine connect to
    its address, so the certificate names it (else every handshake fails to verify)."""

    ca: RunCA
    hosts: tuple[str, ...]

    def issue(self, key_type: str) -> Issued:
        return self.ca.issue(key_type, self.hosts)
