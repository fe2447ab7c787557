"""FedProx client: FedAvg's local training plus a proximal term around the global model.

The strength ``proximal-mu`` comes from the server's round config (Flower's FedProx
strategy puts it there), so the server decides it for everyone.
"""

from __future__ import annotations

from flwr.app import ConfigRecord

from stamen.client.local_step import FedAvgClient


class FedProxClient(FedAvgClient):
    def proximal_mu(self, round_config: ConfigRecord) -> float:
        return float(round_config["proximal-mu"])  # the server's FedProx sends it every round: no client default


PART = FedProxClient()
