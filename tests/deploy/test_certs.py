"""Deployment certificates: what TLS and Flower's node authentication will check."""

import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_ssh_private_key, load_ssh_public_key
from flwr.supercore.primitives.asymmetric import uses_nist_ec_curve

from simulations.deploy.certs import make_certificates


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
