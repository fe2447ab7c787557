"""Deployment certificates: what TLS and Flower's node authentication will check."""

import ipaddress
import os
import stat
import subprocess
import sys

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_ssh_private_key, load_ssh_public_key
from flwr.supercore.primitives.asymmetric import uses_nist_ec_curve

from stamen.simulations.deploy.certs import make_certificates, make_node_key


def test_superlink_certificate_is_signed_by_the_ca_for_every_host(tmp_path):
    files = make_certificates(tmp_path / "certs", ["10.77.0.1", "superlink.example.org"], num_nodes=3)
    ca = x509.load_pem_x509_certificate(files.ca_certificate.read_bytes())
    server = x509.load_pem_x509_certificate(files.superlink_certificate.read_bytes())
    server.verify_directly_issued_by(ca)  # raises if the signature or issuer is wrong
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("10.77.0.1")]
    assert names.get_values_for_type(x509.DNSName) == ["superlink.example.org"]
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert files.superlink_key.stat().st_mode & 0o077 == 0  # private keys readable by the owner only


def test_node_keys_are_the_openssh_nist_keys_flower_reads(tmp_path):
    files = make_certificates(tmp_path / "certs", ["127.0.0.1"], num_nodes=2)
    keys = []
    for index in range(2):
        private = load_ssh_private_key(files.node_private_key(index).read_bytes(), None)
        public = load_ssh_public_key(files.node_public_key(index).read_bytes())
        assert isinstance(public, ec.EllipticCurvePublicKey) and uses_nist_ec_curve(public)
        assert private.public_key().public_numbers() == public.public_numbers()
        keys.append(public.public_numbers())
    assert keys[0] != keys[1]


def test_existing_certificates_are_never_overwritten(tmp_path):
    make_certificates(tmp_path, ["127.0.0.1"], num_nodes=1)
    with pytest.raises(FileExistsError, match="choose an empty folder"):
        make_certificates(tmp_path, ["127.0.0.1"], num_nodes=1)
    with pytest.raises(ValueError, match="at least one host"):
        make_certificates(tmp_path / "other", [], num_nodes=1)


def test_every_private_key_is_owner_only_from_creation(tmp_path):
    files = make_certificates(tmp_path / "certs", ["127.0.0.1"], num_nodes=2)
    keys = [files.ca_key, files.superlink_key, files.node_private_key(0), files.node_private_key(1)]
    for key in keys:
        assert stat.S_IMODE(key.stat().st_mode) == 0o600, key
    for public in [files.ca_certificate, files.superlink_certificate, files.node_public_key(0)]:
        assert stat.S_IMODE(public.stat().st_mode) == 0o644 & ~_umask(), public


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.mark.slow
def test_an_existing_ca_key_without_ca_pem_is_left_untouched(tmp_path):
    root = tmp_path / "certs"
    (root / "nodes").mkdir(parents=True)
    (root / "ca.key").write_bytes(b"the operator's only CA key")
    (root / "nodes" / "node-1.key").write_bytes(b"node 1's key")
    command = ["deploy", "certs", "--out", str(root), "--host", "10.0.0.5", "--clients", "2"]
    result = subprocess.run(
        [sys.executable, "-m", "stamen.cli.main", *command], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "ca.key" in line and "nodes/node-1.key" in line and "never overwritten" in line
    assert (root / "ca.key").read_bytes() == b"the operator's only CA key"
    assert (root / "nodes" / "node-1.key").read_bytes() == b"node 1's key"
    assert sorted(p.name for p in root.rglob("*")) == ["ca.key", "node-1.key", "nodes"]  # nothing written


def test_symlinked_folder_or_target_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "linked").symlink_to(elsewhere)
    with pytest.raises(ValueError, match="symbolic link"):
        make_certificates(tmp_path / "linked", ["127.0.0.1"], num_nodes=1)
    root = tmp_path / "certs"
    root.mkdir()
    (root / "superlink.key").symlink_to(tmp_path / "victim")  # a dangling link: writing would create the victim
    with pytest.raises(FileExistsError, match="superlink.key"):
        make_certificates(root, ["127.0.0.1"], num_nodes=1)
    assert not (tmp_path / "victim").exists() and list(elsewhere.iterdir()) == []
    assert sorted(p.name for p in root.iterdir()) == ["superlink.key"]


def test_make_node_key_never_replaces_a_key(tmp_path):
    make_node_key(tmp_path / "n.key", tmp_path / "n.pub")
    before = (tmp_path / "n.key").read_bytes()
    with pytest.raises(FileExistsError, match="n.key, n.pub"):
        make_node_key(tmp_path / "n.key", tmp_path / "n.pub")
    assert (tmp_path / "n.key").read_bytes() == before
