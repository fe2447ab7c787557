"""The client part of gcfl: the run's task's local step on the received weights (:mod:`stamen.client.local_step`)."""

from stamen.client.local_step import FedAvgClient

PART = FedAvgClient()
