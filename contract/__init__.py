"""The app's contract: what the ServerApp, the ClientApp and the command line agree on.

- :mod:`contract.run_config`: the run config, declared once (types, ranges, choices, help);
- :mod:`contract.protocol`: the names of every record and key that client and server send each other.

No PyTorch and no Flower transport code: both apps, the CLI and the benches import it cheaply.
"""
