"""Certificates and keys of a deployment: a CA, the SuperLink's TLS certificate, one key pair per SuperNode.

The SuperLink serves TLS with a certificate signed by a CA of the deployment's own;
SuperNodes and ``flwr`` trust that CA (``--root-certificates``, ``root-certificates``
in ``config.toml``). The certificate lists every host name and IP address under which
the SuperLink is reached as a subject alternative name, since TLS checks the name a
client dialled against them.

Each SuperNode signs its requests with its own EC private key (NIST P-384, OpenSSH
format, as ``flower-supernode --auth-supernode-private-key`` reads it); its public key
is registered with the SuperLink (``flwr supernode register``) before it connects.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class DeploymentFiles:
    """Where :func:`make_certificates` puts everything under one folder.

    ``ca.pem`` is public (every SuperNode and every ``flwr`` user gets it); ``ca.key``
    stays with whoever signs; ``superlink.key`` stays on the SuperLink's host;
    ``nodes/node-<i>.key`` stays on SuperNode ``i``'s host, ``node-<i>.pub`` goes to
    the federation's operator for registration.
    """

    root: Path

    @property
    def ca_certificate(self) -> Path:
        return self.root / "ca.pem"

    @property
    def ca_key(self) -> Path:
        return self.root / "ca.key"

    @property
    def superlink_certificate(self) -> Path:
        return self.root / "superlink.pem"

    @property
    def superlink_key(self) -> Path:
        return self.root / "superlink.key"

    def node_private_key(self, index: int) -> Path:
        return self.root / "nodes" / f"node-{index}.key"

    def node_public_key(self, index: int) -> Path:
        return self.root / "nodes" / f"node-{index}.pub"


def _write(path: Path, data: bytes, private: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(0o600 if private else 0o644)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _subject_names(hosts: list[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def make_certificates(root: Path, hosts: list[str], num_nodes: int, days: int = 365) -> DeploymentFiles:
    """Write a CA, a SuperLink certificate for ``hosts`` and ``num_nodes`` SuperNode key pairs.

    Raises:
        ValueError: no host given, or fewer than one node.
        FileExistsError: ``root`` already holds a CA (never overwrite a deployment's keys).
    """
    if not hosts:
        raise ValueError("give at least one host name or IP address the SuperLink is reached under")
    if num_nodes < 1:
        raise ValueError(f"the number of SuperNodes must be >= 1, got {num_nodes}")
    files = DeploymentFiles(Path(root))
    if files.ca_certificate.exists():
        raise FileExistsError(f"{files.ca_certificate} exists; choose an empty folder for new certificates")
    now = datetime.datetime.now(datetime.UTC)
    valid_from, valid_to = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)

    ca_key = ec.generate_private_key(ec.SECP384R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Stamen deployment CA")])
    ca_certificate = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid_from)
        .not_valid_after(valid_to)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # key_cert_sign, crl_sign
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA384())
    )

    server_key = ec.generate_private_key(ec.SECP384R1())
    server_certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
        .issuer_name(ca_name)
        .public_key(server_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(valid_from)
        .not_valid_after(valid_to)
        .add_extension(x509.SubjectAlternativeName(_subject_names(hosts)), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA384())
    )

    _write(files.ca_key, _pem_key(ca_key), private=True)
    _write(files.ca_certificate, ca_certificate.public_bytes(serialization.Encoding.PEM), private=False)
    _write(files.superlink_key, _pem_key(server_key), private=True)
    _write(files.superlink_certificate, server_certificate.public_bytes(serialization.Encoding.PEM), private=False)
    for index in range(num_nodes):
        make_node_key(files.node_private_key(index), files.node_public_key(index))
    return files


def make_node_key(private_path: Path, public_path: Path) -> None:
    """One SuperNode's P-384 key pair in OpenSSH format (what Flower reads and registers)."""
    key = ec.generate_private_key(ec.SECP384R1())
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    _write(private_path, private, private=True)
    _write(public_path, public + b"\n", private=False)
