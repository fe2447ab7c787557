"""Certificates and keys of a deployment: a CA, the SuperLink's TLS certificate, one key pair per SuperNode.

The SuperLink serves TLS with a certificate signed by a CA of the deployment's own;
SuperNodes and ``flwr`` trust that CA (``--root-certificates``, ``root-certificates``
in ``config.toml``). The certificate lists every host name and IP address under which
the SuperLink is reached as a subject alternative name, since TLS checks the name a
client dialled against them.

Each SuperNode signs its requests with its own EC private key (NIST P-384, OpenSSH
format, as ``flower-supernode --auth-supernode-private-key`` reads it); its public key
is registered with the SuperLink (``flwr supernode register``) before it connects.

Key material is never overwritten: every target file is checked before anything is
written (one error naming all that exist), each file is created exclusively and
without following a symbolic link (``O_CREAT | O_EXCL | O_NOFOLLOW``, relative to
folders opened with ``O_NOFOLLOW``), private keys with mode 0600 from their creation,
and a call that fails half-way removes only the files it created itself.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
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


_DIRECTORY_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
MAX_NODES = 10_000  # SuperNodes of one deployment: far beyond a federation Flower's SuperLink serves
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_NAME = rf"{_LABEL}(?:\.{_LABEL})*\.?"
_NEW_FILE_FLAGS = os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW


def _check_folder(path: Path) -> None:
    """A folder to write into: absent or a real directory (never a link, never a file)."""
    if path.is_symlink():
        raise ValueError(f"{path} is a symbolic link; give a real folder for deployment keys")
    if path.exists() and not path.is_dir():
        raise ValueError(f"{path} is not a folder")


def _check_targets(root: Path, relative: list[str]) -> None:
    """Refuse before writing anything if any target exists (as a file, folder or link)."""
    _check_folder(root)
    for folder in sorted({Path(name).parent for name in relative} - {Path(".")}):
        _check_folder(root / folder)
    existing = [name for name in relative if os.path.lexists(root / name)]
    if existing:
        raise FileExistsError(
            f"{root} already holds {', '.join(existing)}; keys and certificates are never overwritten: "
            "choose an empty folder"
        )


def _open_folder(path: Path, parent_fd: int | None = None) -> int:
    """Create (if needed) and open a folder without following a link at its last component."""
    try:
        os.mkdir(path if parent_fd is None else path.name, 0o755, dir_fd=parent_fd)
    except FileExistsError:
        pass
    return os.open(path if parent_fd is None else path.name, _DIRECTORY_FLAGS, dir_fd=parent_fd)


def _write_files(root: Path, contents: dict[str, tuple[bytes, bool]]) -> None:
    """Create every ``relative name -> (bytes, private)`` under ``root`` exclusively, or none of them."""
    _check_targets(root, list(contents))
    root.parent.mkdir(parents=True, exist_ok=True)
    folders: dict[Path, int] = {}
    created: list[tuple[int, str]] = []
    try:
        folders[Path(".")] = _open_folder(root)
        for name, (data, private) in contents.items():
            relative = Path(name)
            for depth in range(1, len(relative.parts)):
                folder = Path(*relative.parts[:depth])
                if folder not in folders:
                    folders[folder] = _open_folder(folder, folders[folder.parent])
            folder_fd = folders[relative.parent]
            descriptor = os.open(relative.name, _NEW_FILE_FLAGS, 0o600 if private else 0o644, dir_fd=folder_fd)
            created.append((folder_fd, relative.name))
            with os.fdopen(descriptor, "wb") as handle:
                handle.write(data)
    except BaseException:
        for folder_fd, file_name in reversed(created):  # only files this call created
            try:
                os.unlink(file_name, dir_fd=folder_fd)
            except FileNotFoundError:
                pass
        raise
    finally:
        for descriptor in folders.values():
            os.close(descriptor)


def _pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _is_host(text: str) -> bool:
    """An IP address, or a host name of letters, digits and hyphens in dot-separated labels (RFC 1123)."""
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return len(text) <= 253 and re.fullmatch(_HOST_NAME, text) is not None
    return True


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
        ValueError: ``root`` (or ``root/nodes``) is a symbolic link or a file.
        FileExistsError: ``root`` already holds one of the files (never overwrite a deployment's keys).
    """
    if not hosts:
        raise ValueError("give at least one host name or IP address the SuperLink is reached under")
    if num_nodes < 1:
        raise ValueError(f"the number of SuperNodes must be >= 1, got {num_nodes}")
    if num_nodes > MAX_NODES:
        raise ValueError(f"the number of SuperNodes must be at most {MAX_NODES:,} (a key pair each), got {num_nodes}")
    for host in hosts:
        if not _is_host(host):
            raise ValueError(f"--host {host!r} is neither an IP address nor a host name; give e.g. 10.0.0.5 or node1")
    files = DeploymentFiles(Path(root))
    names = ["ca.key", "ca.pem", "superlink.key", "superlink.pem"]
    names += [f"nodes/node-{index}.{ext}" for index in range(num_nodes) for ext in ("key", "pub")]
    _check_targets(files.root, names)  # before the slow key generation
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

    contents = {
        "ca.key": (_pem_key(ca_key), True),
        "ca.pem": (ca_certificate.public_bytes(serialization.Encoding.PEM), False),
        "superlink.key": (_pem_key(server_key), True),
        "superlink.pem": (server_certificate.public_bytes(serialization.Encoding.PEM), False),
    }
    for index in range(num_nodes):
        private, public = _node_key_pair()
        contents[f"nodes/node-{index}.key"] = (private, True)
        contents[f"nodes/node-{index}.pub"] = (public, False)
    _write_files(files.root, contents)
    return files


def _node_key_pair() -> tuple[bytes, bytes]:
    key = ec.generate_private_key(ec.SECP384R1())
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public + b"\n"


def make_node_key(private_path: Path, public_path: Path) -> None:
    """One SuperNode's P-384 key pair in OpenSSH format (what Flower reads and registers).

    Both files go into one folder; neither may exist yet.
    """
    private_path, public_path = Path(private_path), Path(public_path)
    if private_path.parent != public_path.parent:
        raise ValueError(f"{private_path} and {public_path} must be in one folder")
    private, public = _node_key_pair()
    _write_files(private_path.parent, {private_path.name: (private, True), public_path.name: (public, False)})


def _read(path: Path, what: str, flag: str) -> bytes:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{flag} {path}: {what} not found")
    try:
        return path.read_bytes()
    except OSError as problem:
        raise ValueError(f"{flag} {path}: cannot read the {what} ({problem.strerror})") from None


def check_certificate(path: Path, what: str, flag: str) -> Path:
    """``path`` if it is a readable PEM certificate, else one-line FileNotFoundError or ValueError."""
    try:
        x509.load_pem_x509_certificate(_read(path, what, flag))
    except ValueError:
        raise ValueError(f"{flag} {path}: not a PEM certificate ({what})") from None
    return Path(path)


def check_node_key(path: Path, flag: str = "--key") -> Path:
    """``path`` if it holds a SuperNode's private key as Flower reads it (EC, OpenSSH format, no passphrase).

    Raises one-line FileNotFoundError or ValueError otherwise (before a SuperNode starts and fails on it).
    """
    data = _read(path, "SuperNode private key", flag)
    try:
        key = serialization.load_ssh_private_key(data, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise ValueError(
            f"{flag} {path}: not a SuperNode private key (an OpenSSH EC key without passphrase, "
            "as `stamen deploy certs` writes nodes/node-<i>.key)"
        ) from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{flag} {path}: a {type(key).__name__.removeprefix('_')} key; SuperNodes sign with EC keys")
    return Path(path)


def check_tls_key(path: Path, flag: str) -> Path:
    """``path`` if it holds a PEM private key without passphrase (the SuperLink's TLS key)."""
    try:
        serialization.load_pem_private_key(_read(path, "TLS private key", flag), password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        raise ValueError(f"{flag} {path}: not a PEM private key without passphrase (superlink.key)") from None
    return Path(path)
