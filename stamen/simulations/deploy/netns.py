"""Separate hosts on one machine: Linux network namespaces joined by a bridge.

Each host is a network namespace with its own loopback and one interface (a veth
pair whose other end sits on a bridge in the root namespace), so processes in
different hosts reach each other only over the virtual LAN, by IP address, as on
separate machines. The root namespace gets the bridge's address (the operator's
laptop: ``flwr run``). Needs root (``ip netns add``); :func:`namespaces_available`
says whether this machine allows it.
"""

from __future__ import annotations

import ipaddress
import os
import random
import shutil
import subprocess
import uuid


def _ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)} failed: {result.stderr.strip()}")


def namespaces_available() -> tuple[bool, str]:
    """Whether network namespaces can be made here, and why not if not."""
    if shutil.which("ip") is None:
        return False, "the `ip` command (iproute2) is not installed"
    if os.geteuid() != 0:
        return False, "network namespaces need root"
    probe = f"stamen-probe-{uuid.uuid4().hex[:6]}"
    try:
        _ip("netns", "add", probe)
    except RuntimeError as error:
        return False, str(error)
    _ip("netns", "del", probe)
    return True, ""


def free_subnet(pool: str = "10.77.0.0/16", prefix_length: int = 24) -> str:
    """A random ``/prefix_length`` of ``pool`` that no interface of the root namespace sits on.

    Several deployments (tests of several checkouts, a benchmark) may run on one
    machine at once; two bridges on one subnet would route one's traffic to the other.
    """
    result = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True)
    # `ip -o -4 addr show` lines: "<index>: <device> inet <address>/<length> ..."
    used = [ipaddress.ip_interface(line.split()[3]).network for line in result.stdout.splitlines() if " inet " in line]
    free = [
        candidate
        for candidate in ipaddress.ip_network(pool).subnets(new_prefix=prefix_length)
        if not any(candidate.overlaps(network) for network in used)
    ]
    if not free:
        raise RuntimeError(f"no free /{prefix_length} left in {pool} for a virtual network")
    return str(random.SystemRandom().choice(free))


class VirtualNetwork:
    """Hosts ``names`` on a /24 LAN ``subnet`` (a free one if not given); the root namespace is the last address.

    Use as a context manager; everything it made (namespaces, veth pairs, bridge) is
    removed on exit, also when the body fails.
    """

    def __init__(self, names: list[str], subnet: str | None = None) -> None:
        network = ipaddress.ip_network(subnet or free_subnet())
        hosts = list(network.hosts())
        if len(names) + 1 > len(hosts):
            raise ValueError(f"subnet {subnet} is too small for {len(names)} hosts")
        tag = uuid.uuid4().hex[:6]  # unique names: several networks (or test runs) may coexist
        self.prefix_length = network.prefixlen
        self.bridge = f"stbr{tag}"
        self.gateway = str(hosts[-1])
        self.namespaces = {name: f"stamen-{tag}-{name}" for name in names}
        self.addresses = {name: str(hosts[index]) for index, name in enumerate(names)}
        self._veths = {name: f"stv{tag}{index}" for index, name in enumerate(names)}
        self._made: list[tuple[str, ...]] = []  # undo commands, newest last

    def address(self, name: str) -> str:
        return self.addresses[name]

    def exec_prefix(self, name: str) -> list[str]:
        """The command prefix that runs a program inside host ``name``."""
        return ["ip", "netns", "exec", self.namespaces[name]]

    def __enter__(self) -> VirtualNetwork:
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            self._made.append(("link", "del", self.bridge))
            _ip("addr", "add", f"{self.gateway}/{self.prefix_length}", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for name, namespace in self.namespaces.items():
                _ip("netns", "add", namespace)
                self._made.append(("netns", "del", namespace))
                _ip("link", "add", self._veths[name], "type", "veth", "peer", "name", "eth0", "netns", namespace)
                _ip("link", "set", self._veths[name], "master", self.bridge, "up")
                _ip("-n", namespace, "addr", "add", f"{self.addresses[name]}/{self.prefix_length}", "dev", "eth0")
                _ip("-n", namespace, "link", "set", "eth0", "up")
                _ip("-n", namespace, "link", "set", "lo", "up")
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        """Remove namespaces and links (a namespace takes its end of the veth pair with it)."""
        while self._made:
            undo = self._made.pop()
            subprocess.run(["ip", *undo], capture_output=True)

    def __exit__(self, *exc_info: object) -> None:
        self.close()
