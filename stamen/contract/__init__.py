"""The app's contract: what the ServerApp, the ClientApp and the command line agree on.

- :mod:`stamen.contract.run_config`: the run config, declared once per feature section (types,
  ranges, choices, help; :mod:`stamen.contract.keys`) with its one validation; the rules
  between keys in :mod:`stamen.contract.rules`;
- :mod:`stamen.contract.certify_config`: the options of ``stamen certify``, declared the same way;
- :mod:`stamen.contract.algorithms`: the registry of FL algorithms (one spec per algorithm);
- :mod:`stamen.contract.unlearn_methods`: the registry of a federated run's unlearning methods;
- :mod:`stamen.contract.protocol`: the names of every record and key that client and server send each other.

No PyTorch and no Flower transport code: both apps, the CLI and the benches import it cheaply.
"""
